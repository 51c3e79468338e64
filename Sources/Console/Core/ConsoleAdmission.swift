import ScanCore

/// Who gets a console connection slot (docs/console.md, "Connections"). Pure: the transport
/// describes its slots and acts on the answer, so every rule is unit-tested without sockets.
///
/// - A peer (`PeerKey`: a network, a local user, the unknown-owner local key) may hold at most
///   `perPeerMax` connections that have not authenticated; one more is refused. An operator's
///   connections do not count, and are never closed to make room.
/// - When every slot is taken, a newcomer may take the slot of a connection that has not
///   authenticated: from a network peer when the newcomer is on this host (a user on the
///   reader comes before the network), else only from a peer that holds at least two more such
///   connections than the newcomer's peer does (equal peers never swap, so nobody can churn a
///   fair share away). Among those: network peers first, then the peer holding most, then the
///   connection idle longest.
public enum ConsoleAdmission {
  /// One occupied slot as the rules see it.
  public struct Occupant: Sendable {
    public var peer: PeerKey
    /// An operator (after AUTH): never closed for a newcomer, not counted against its peer.
    public var authenticated: Bool
    public var lastActivity: Instant
    public init(peer: PeerKey, authenticated: Bool, lastActivity: Instant) {
      self.peer = peer
      self.authenticated = authenticated
      self.lastActivity = lastActivity
    }
  }

  /// What to do with a new connection.
  public enum Decision: Equatable, Sendable {
    /// Use this free slot.
    case free(Int)
    /// Close the connection in this slot, then use it.
    case reclaim(Int)
    /// The peer holds `perPeerMax` unauthenticated connections already.
    case refusedPeer
    /// Every slot is taken and none may give way.
    case refusedFull
  }

  /// The decision for a connection from `peer` over `slotCount` slots; `occupant(i)` describes
  /// slot `i` (nil: free, or not a TCP slot). O(slots²) comparisons, no allocation.
  public static func decide(
    _ peer: PeerKey, perPeerMax: Int, slotCount: Int, occupant: (Int) -> Occupant?
  ) -> Decision {
    let held = holding(peer, slotCount: slotCount, occupant: occupant)
    if held >= perPeerMax { return .refusedPeer }
    var free = -1
    for i in 0..<slotCount where occupant(i) == nil {
      free = i
      break
    }
    if free >= 0 { return .free(free) }
    var best = -1
    var bestNetwork = false
    var bestHolding = 0
    var bestActivity = Instant(nanoseconds: 0)
    for i in 0..<slotCount {
      guard let o = occupant(i), !o.authenticated else { continue }
      let theirs = holding(o.peer, slotCount: slotCount, occupant: occupant)
      let yields = (o.peer.isNetwork && peer.isLocal) || theirs >= held + 2
      guard yields else { continue }
      let network = o.peer.isNetwork
      let better =
        best < 0 || (network && !bestNetwork)
        || (network == bestNetwork
          && (theirs > bestHolding || (theirs == bestHolding && o.lastActivity < bestActivity)))
      if better {
        best = i
        bestNetwork = network
        bestHolding = theirs
        bestActivity = o.lastActivity
      }
    }
    return best >= 0 ? .reclaim(best) : .refusedFull
  }

  /// The unauthenticated connections `peer` holds.
  public static func holding(_ peer: PeerKey, slotCount: Int, occupant: (Int) -> Occupant?) -> Int {
    var n = 0
    for i in 0..<slotCount {
      if let o = occupant(i), !o.authenticated, o.peer == peer { n += 1 }
    }
    return n
  }
}

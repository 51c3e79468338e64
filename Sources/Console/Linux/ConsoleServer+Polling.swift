import CLinux
import CTLS
import Glibc
import ScanConsole
import ScanCore
import ScanPlatform

extension ConsoleServer {
  // MARK: - Polling

  /// Descriptors the console may add to a poll set at most.
  public var pollCapacity: Int { listenerDescriptors.count + slotCount }

  /// Whether client `i`'s line queue can take another read.
  func hasRoom(_ i: Int) -> Bool { clients[i].queueBytes + Self.lineBytesMax + 2 <= Self.queueBytes }

  /// Whether TLS client `i` holds decrypted input that poll cannot report (read it now).
  func tlsInputPending(_ i: Int) -> Bool {
    guard let session = clients[i].tls, !clients[i].handshaking else { return false }
    return hasRoom(i) && sg_tls_pending(session) > 0
  }

  /// Adds the listeners and clients to `poll`; returns when the console next needs the loop
  /// (a serial reopen, an idle client, a snapshot being rendered).
  public func prepare(_ poll: PollSet, now: Instant, rendering: Bool) -> Instant? {
    for k in 0..<listenerDescriptors.count {
      listenerTokens[k] = poll.add(listenerDescriptors[k], events: Int16(POLLIN))
    }
    for i in 0..<slotCount {
      clientTokens[i] = .none
      guard clients[i].fd >= 0 else { continue }
      var events = Int16(0)
      if clients[i].handshaking {
        events = clients[i].handshakeWants
      } else {
        if hasRoom(i) || clients[i].writeWantsRead { events |= Int16(POLLIN) }
        if clients[i].outputStart < clients[i].outputEnd || i == bulkClient || clients[i].readWantsWrite { events |= Int16(POLLOUT) }
      }
      clientTokens[i] = poll.add(clients[i].fd, events: events)
    }
    var deadline: Instant? = rendering ? now.adding(milliseconds: 10) : nil
    for i in 0..<slotCount where clients[i].tls != nil {
      var due: Instant? = nil
      if clients[i].handshaking {
        due = clients[i].lastActivity.adding(milliseconds: settings.tlsHandshakeTimeoutMilliseconds)
      } else if tlsInputPending(i) {
        due = now
      }
      if let due, deadline == nil || due < deadline! { deadline = due }
    }
    if !settings.serialPath.isEmpty && !serialOpen && (deadline == nil || serialRetryAt < deadline!) { deadline = serialRetryAt }
    return deadline
  }

  /// Handles what poll reported: accepts, reads into the line queues, flushes, closes idle
  /// clients, ends idle serial operator sessions, reopens the serial port.
  public func service(_ poll: PollSet) {
    let now = clock.now()
    for k in 0..<listenerDescriptors.count where poll.revents(listenerTokens[k]) & Int16(POLLIN) != 0 {
      acceptAll(listenerDescriptors[k], tls: listenerTLS[k], unix: listenerUnix[k])
    }
    for i in 0..<slotCount where clients[i].fd >= 0 {
      let revents = poll.revents(clientTokens[i])
      if clients[i].handshaking {
        if revents != 0 { advanceHandshake(i) }
        continue
      }
      if revents & Int16(POLLOUT) != 0 || (clients[i].writeWantsRead && revents & Int16(POLLIN) != 0) {
        flush(i)
        if i == bulkClient { pumpBulk() }
      }
      guard clients[i].fd >= 0 else { continue }
      if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 || (clients[i].readWantsWrite && revents & Int16(POLLOUT) != 0)
        || tlsInputPending(i)
      {
        readClient(i, now: now)
      }
    }
    for i in 0..<slotCount where clients[i].fd >= 0 && clients[i].handshaking {
      if now.milliseconds(since: clients[i].lastActivity) >= settings.tlsHandshakeTimeoutMilliseconds {
        tlsHandshakeTimeouts &+= 1
        lastTLSFailure = "no handshake within \(settings.tlsHandshakeTimeoutMilliseconds) ms"
        disconnect(i)
      }
    }
    for i in 0..<slotCount where clients[i].fd >= 0 && !clients[i].isSerial && !clients[i].handshaking {
      if now.milliseconds(since: clients[i].lastActivity) > settings.idleTimeoutSeconds * 1000 {
        write(i) { $0.write("! idle timeout, closing\n") }
        disconnect(i)
      }
    }
    commands.expireIdleOperators { i in write(i) { $0.write("! idle: operator role ended; AUTH again\n") } }
    if !settings.serialPath.isEmpty && !serialOpen && now >= serialRetryAt { openSerial() }
  }

  func acceptAll(_ listener: Int32, tls: Bool, unix: Bool = false) {
    for _ in 0..<16 {
      var address = sockaddr_storage()
      var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
      let accepted = withUnsafeMutablePointer(to: &address) { a in
        try? syscallRetrying("accept on \(listener)", { a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sg_accept_nonblocking(listener, $0, &length) } })
      }
      guard case .done(let fd)? = accepted else { return }  // EAGAIN: none left; other errors: try again next time
      let peer = unix ? Self.unixPeer(fd) : peerKey(fd, address)
      let slot: Int
      switch admission(for: peer) {
      case .free(let free): slot = free
      case .reclaim(let victim):
        reclaimedClients &+= 1
        write(victim) { $0.write("! closing: the console is full and this connection has not authenticated (AUTH keeps a connection)\n") }
        disconnect(victim)
        slot = victim
      case .refusedPeer:
        refuse(fd, tls: tls, "ERR 503 too many connections from your address or user; AUTH on one, or close one\n")
        continue
      case .refusedFull:
        refuse(fd, tls: tls, "ERR 503 too many clients\n")
        continue
      }
      guard tls else {
        attach(fd: fd, peer: peer, slot: slot, serial: false)
        if unix, let uid = peer.localUID, unixOperatorUIDs.contains(uid) {
          commands.grantOperator(slot)
          write(slot) { w in
            w.write("! operator: uid ")
            w.write(uid)
            w.write(" on the Unix socket (console.unix_operators)\n")
          }
        }
        continue
      }
      // One OpenSSL session per accepted connection: allocated here, freed on disconnect.
      guard let context = self.tls?.context, let session = sg_tls_session_new(context, fd) else {
        rejectedClients &+= 1
        closeDescriptor(fd)
        continue
      }
      clients[slot] = Client(
        fd: fd, lastActivity: clock.now(), tls: session, handshaking: true,
        handshakeWants: Int16(POLLIN), peer: peer)
      advanceHandshake(slot)
    }
  }

  /// Where a connection from `peer` goes (`ConsoleAdmission` over the TCP slots; the serial
  /// port's slot is never offered, so no TCP client can take or close it).
  func admission(for peer: PeerKey) -> ConsoleAdmission.Decision {
    ConsoleAdmission.decide(peer, perPeerMax: settings.clientsPerPeerMax, slotCount: slotCount - 1) { i in
      guard clients[i].fd >= 0 else { return nil }
      return ConsoleAdmission.Occupant(
        peer: clients[i].peer, authenticated: !clients[i].handshaking && commands[i].isOperator,
        lastActivity: clients[i].lastActivity)
    }
  }

  /// Tells a refused client why (a TLS client could not read it before a handshake: just
  /// closed) and closes it.
  func refuse(_ fd: Int32, tls: Bool, _ message: StaticString) {
    rejectedClients &+= 1
    if !tls { _ = message.withUTF8Buffer { m in try? syscallRetrying("send to \(fd)", { Glibc.send(fd, m.baseAddress, m.count, Int32(MSG_NOSIGNAL)) }) } }
    closeDescriptor(fd)
  }

  /// One step of client `i`'s TLS handshake; starts the console session when it is done.
  func advanceHandshake(_ i: Int) {
    guard let session = clients[i].tls else { return }
    switch sg_tls_handshake(session) {
    case Int32(SG_TLS_DONE):
      tlsHandshakes &+= 1
      clients[i].handshaking = false
      clients[i].handshakeWants = 0
      clients[i].lastActivity = clock.now()
      startSession(i)
    case Int32(SG_TLS_WANT_READ): clients[i].handshakeWants = Int16(POLLIN)
    case Int32(SG_TLS_WANT_WRITE): clients[i].handshakeWants = Int16(POLLOUT)
    default:
      tlsHandshakeFailures &+= 1
      lastTLSFailure = String(cString: sg_tls_error(session))
      disconnect(i)
    }
  }

  /// The peer of accepted connection `fd`: the user owning the other end when it is on this
  /// host (the kernel says, `sg_tcp_peer_owner`), else the network of `address`. A loopback
  /// client whose owner cannot be told (the lookup is unavailable, or its socket is already
  /// closed) is `PeerKey.loopback`, never a user.
  func peerKey(_ fd: Int32, _ address: sockaddr_storage) -> PeerKey {
    let network = Self.peerKey(address)
    guard peerOwners >= 0 else { return network }
    var uid: UInt32 = 0
    let found: IOResult<Int32>
    do { found = try syscallRetrying("sock_diag lookup", { sg_tcp_peer_owner(peerOwners, fd, &uid) }) } catch { return network }
    guard case .done(let kind) = found else { return network }
    switch kind {
    case Int32(SG_PEER_OWNED): return .localUser(uid)
    case Int32(SG_PEER_UNOWNED): return .loopback
    default: return network
    }
  }

  static func peerKey(_ address: sockaddr_storage) -> PeerKey {
    var a = address
    return withUnsafePointer(to: &a) { p -> PeerKey in
      if p.pointee.ss_family == sa_family_t(AF_INET6) {
        return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { s in
          withUnsafeBytes(of: s.pointee.sin6_addr) { b in
            PeerKey.ipv6(
              high: UInt64(bigEndian: b.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
              low: UInt64(bigEndian: b.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
          }
        }
      }
      return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { s in
        PeerKey.ipv4(UInt32(bigEndian: s.pointee.sin_addr.s_addr))
      }
    }
  }

  func readClient(_ i: Int, now: Instant) {
    let fd = clients[i].fd
    let room = min(readBuffer.count, Self.queueBytes - clients[i].queueBytes)
    let count: Int
    if let session = clients[i].tls {
      guard room > 0 else { return }
      clients[i].readWantsWrite = false
      let n = sg_tls_read(session, readBuffer.baseAddress, Int32(room))
      switch n {
      case 1...: count = Int(n)
      case Int32(SG_TLS_WANT_READ): return
      case Int32(SG_TLS_WANT_WRITE): clients[i].readWantsWrite = true; return
      default: disconnect(i); return  // close_notify, end of stream, or a TLS error
      }
    } else {
      let n: IOResult<Int>
      do { n = try syscallRetrying("console read", { Glibc.read(fd, readBuffer.baseAddress, room) }) } catch {
        disconnect(i)
        return
      }
      guard case .done(let read) = n else { return }
      if read == 0 {
        disconnect(i)  // end of stream (or, for a tty, the other side hung up)
        return
      }
      count = read
    }
    clients[i].lastActivity = now
    framers[i].feed(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count])) { out in
      switch out {
      case .line(let line): enqueue(i, line: line, overlong: false)
      case .overlong: enqueue(i, line: UnsafeRawBufferPointer(start: nil, count: 0), overlong: true)
      }
    }
  }

  /// Queues a complete line as [length: UInt16][bytes]; an overlong line as length 0xFFFF.
  func enqueue(_ i: Int, line: UnsafeRawBufferPointer, overlong: Bool) {
    let base = i * Self.queueBytes + clients[i].queueBytes
    guard clients[i].queueBytes + 2 + line.count <= Self.queueBytes else {
      // Cannot happen: reads are sized to the free queue space. Treat it as a protocol error.
      disconnect(i, dropped: true)
      return
    }
    queue.storeBytes(of: overlong ? UInt16.max : UInt16(line.count), toByteOffset: base, as: UInt16.self)
    if !line.isEmpty { (queue.baseAddress! + base + 2).copyMemory(from: line.baseAddress!, byteCount: line.count) }
    clients[i].queueBytes += 2 + line.count
    clients[i].queued += 1
  }

  /// Runs every queued line of every client through the command interpreter against `host`.
  public func runCommands<Host: ConsoleHost & ~Copyable>(host: inout Host) {
    drainLines { slot, line in commands.handle(slot, line: line, host: &host, output: self) }
  }

  /// Calls `body` for every queued line of every client, oldest first, then empties the queues.
  /// An overlong line comes as `nil`.
  func drainLines(_ body: (Int, UnsafeRawBufferPointer?) -> Void) {
    // A client receiving a bulk reply gets its next reply after it: its lines wait.
    for i in 0..<slotCount where clients[i].queued > 0 && i != bulkClient {
      var offset = i * Self.queueBytes
      let end = offset + clients[i].queueBytes
      while offset < end && clients[i].fd >= 0 {
        let length = Int(queue.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
        if length == Int(UInt16.max) {
          body(i, nil)
          offset += 2
        } else {
          body(i, UnsafeRawBufferPointer(rebasing: queue[(offset + 2)..<(offset + 2 + length)]))
          offset += 2 + length
        }
      }
      clients[i].queued = 0
      clients[i].queueBytes = 0
    }
  }

  /// Sends every new event to the clients that are watching, payloads shown only to operators.
  /// Events are formatted straight into each client's output buffer; nothing is allocated.
  /// With `upTo`, nothing later is sent (the audit log's committed position: an event a
  /// client has seen is one the log already holds).
  public func broadcast(_ ring: EventRing, since start: Instant, upTo limit: UInt64? = nil) {
    if eventCursor == 0 { eventCursor = ring.lastSequence }  // new console: from now on
    let last = min(ring.lastSequence, limit ?? .max)
    guard last > eventCursor else { return }
    guard watchingClients > 0 else {
      eventCursor = last
      return
    }
    var cursor = EventCursor(next: eventCursor + 1)
    cursor.read(ring, upTo: last) { read in
      for i in 0..<slotCount where clients[i].fd >= 0 && commands[i].watching {
        let visibility = commands.payloadVisibility(i)
        write(i) { w in
          switch read {
          case .event(let e):
            w.write("! ")
            EventText.write(e, since: start, payloads: visibility, into: &w)
            w.newline()
          case .overwritten(let count):
            w.write("! (")
            w.write(count)
            w.write(" events overwritten before they could be sent)\n")
          }
        }
      }
    }
    eventCursor = last
  }
}

import ScanBase

/// A pattern in view must not lock people out (docs/decoder.md, "A pattern in view"): a part of
/// the picture that makes the decoder run past its deadline (a sheet of finder patterns on the
/// wall behind the reader) is found and masked, so that the rest of the view is read at its
/// normal rate.
///
/// The view is a grid of 4 × 4 tiles. After a second decode of the whole view within 10 s is
/// abandoned (or its worker crashes; once may be a passing frame) the tiles it saw are searched
/// by halves: each half is decoded alone (the others blanked to flat
/// gray in the frame the worker gets); a half that comes back is clean, and is read as usual (a
/// badge in it is granted); a half that is abandoned again is split along its longer side, down
/// to two tiles, which are masked. Of a set whose two halves both come back, the half whose
/// decode cost more CPU time is masked: a sheet's finder candidates cost the decoder far more
/// than in proportion to its area (zxing-cpp 1.4's time grows about as their cube), so a strip
/// of it may decode in time where the whole does not. From then on every frame is sent with the masked tiles blanked. A masked group is
/// tried again alone: at once when its picture no longer looks like what was masked (its mean
/// light or its edges changed: the sheet was taken down), and otherwise after a back-off that
/// doubles from `recheckMinMilliseconds` to `recheckMaxMilliseconds`; one that comes back is
/// unmasked.
///
/// Pure: the owner asks `plan` which tiles a frame shows, blanks the rest (`blank`), and says how
/// the decode ended (`completed`, `abandoned`). Fixed storage; nothing allocated per frame.
public struct PatternQuarantine: Sendable {
  public static let columns = 4
  public static let rows = 4
  public static let tileCount = columns * rows
  public static let everyTile: UInt16 = 0xFFFF
  /// The flat gray masked tiles are filled with: no edge, no finder pattern.
  public static let maskLevel: UInt8 = 128

  public struct Settings: Equatable, Sendable {
    public var recheckMinMilliseconds = 1_000
    public var recheckMaxMilliseconds = 4_000
    /// Immediate rechecks (a masked tile's picture changed) come no closer than this.
    public var changedRecheckMilliseconds = 1_000
    /// A recheck that comes back having cost more than this (the unit `completed(cost:)` is given:
    /// the decoder's CPU milliseconds) keeps its group masked: a sheet of coarse modules may
    /// decode in time and still spend the frame's budget before a badge beside it is read.
    public var recheckCostMax = 25
    /// Rechecks that come back over their cost in a row before the group is unmasked anyway (a
    /// scene that got heavier, a slower machine): a wrong mask lasts seconds, never for good; a
    /// real pattern is found again by its abandoned decodes.
    public var softFailuresMax = 8
    public init() {}
  }

  /// A tile's look: mean light and mean difference between neighbouring samples (edges).
  struct Look: Equatable, Sendable {
    var mean: UInt8 = 0
    var edges: UInt8 = 0
  }

  public let settings: Settings
  /// Tiles blanked in every frame: the union of `groups`.
  public private(set) var masked: UInt16 = 0
  /// The masked groups: each was abandoned as a whole (or both its halves came back), so each is
  /// tried again, and unmasked, as a whole.
  private var groups = InlineArray<8, UInt16>(repeating: 0)
  private var groupCount = 0
  /// Tile sets waiting to be decoded alone, each with the set it is half of (a stack: the search
  /// goes depth first).
  private var pending = InlineArray<16, (tiles: UInt16, parent: UInt16)>(repeating: (0, 0))
  private var pendingCount = 0
  /// Sets that were abandoned and whose halves are being tried: how many halves came back, the
  /// first one's tiles and decoder CPU time. Both back: the set is hostile only as a whole (a
  /// sheet's candidates cost the decoder far more than in proportion to its area), and the half
  /// that cost more is masked.
  private var open = InlineArray<8, (tiles: UInt16, clean: Int, firstHalf: UInt16, firstCost: Int, firstFound: Bool, root: Bool)>(
    repeating: (0, 0, 0, 0, false, false))
  private var openCount = 0
  /// The frame in flight: the tiles it shows, the set it is half of, the group it rechecks.
  private var inFlight: UInt16? = nil
  private var inFlightParent: UInt16 = 0
  /// Bit g: group g is being rechecked.
  private var inFlightGroups: UInt8 = 0
  /// The looks of the frame in flight's tiles, and each masked tile's look when it was masked.
  private var inFlightLooks = InlineArray<16, Look>(repeating: Look())
  private var maskedLooks = InlineArray<16, Look>(repeating: Look())
  private var recheckAt = Instant(nanoseconds: 0)
  private var lastPlanned = Instant(nanoseconds: 0)
  private var rootStrikes = 0
  /// The whole view's usual decode cost (a running mean of views that came back in time), and
  /// the rechecks that came back over their cost in a row.
  public private(set) var typicalCost = 10
  private var typicalSamples = 0
  private var softFailures = 0
  private var lastRootStrike = Instant(nanoseconds: 0)
  private var lastChangedRecheck = Instant(nanoseconds: 0)
  private var recheckBackoff = 0
  private var nextRecheckGroup = 0
  /// Counters for STATUS.
  public private(set) var searches: UInt64 = 0
  public private(set) var unmasked: UInt64 = 0

  public init(settings: Settings = Settings()) { self.settings = settings }

  /// Whether a search is under way or tiles are masked.
  public var isActive: Bool { masked != 0 || pendingCount > 0 }

  /// The tiles the next frame shows (the rest are to be blanked), given the frame (`gray`,
  /// `width` × `height`, one byte a pixel) as it came.
  public mutating func plan(at now: Instant, gray: UnsafeRawBufferPointer, width: Int, height: Int) -> UInt16 {
    lastPlanned = now
    inFlightGroups = 0
    inFlightParent = 0
    guard isActive else {
      inFlight = Self.everyTile
      return Self.everyTile
    }
    for t in 0..<Self.tileCount { inFlightLooks[t] = Self.look(t, gray: gray, width: width, height: height) }
    var visible = Self.everyTile & ~masked
    if pendingCount > 0 {
      pendingCount -= 1
      visible = pending[pendingCount].tiles
      inFlightParent = pending[pendingCount].parent
    } else {
      // A recheck shows the group with everything already read: the one test that says whether
      // unmasking it would stop the decoder again (a group may stop it only with its neighbours).
      inFlightGroups = recheckGroups(at: now)
      for g in 0..<groupCount where inFlightGroups & (1 << UInt8(g)) != 0 { visible |= groups[g] }
    }
    inFlight = visible
    return visible
  }

  /// The masked groups to try again alone now (bit g: group g): every one whose picture changed
  /// since it was masked (the sheet taken down: all at once), or (the back-off passed) the next
  /// in turn; 0: none.
  private mutating func recheckGroups(at now: Instant) -> UInt8 {
    var changed: UInt8 = 0
    if now.milliseconds(since: lastChangedRecheck) >= settings.changedRecheckMilliseconds {
      for g in 0..<groupCount {
        for t in 0..<Self.tileCount where groups[g] & (1 << UInt16(t)) != 0 && Self.changed(maskedLooks[t], inFlightLooks[t]) {
          changed |= 1 << UInt8(g)
        }
      }
    }
    if changed != 0 {
      lastChangedRecheck = now
      return changed
    }
    guard now >= recheckAt, groupCount > 0 else { return 0 }
    let g = nextRecheckGroup % groupCount
    nextRecheckGroup = g + 1
    return 1 << UInt8(g)
  }

  /// The frame in flight came back, having used `cost` of the decoder's CPU time (any unit), and
  /// `found`: with a code read. The tiles it showed are clean (a rechecked group is unmasked; of
  /// a set whose halves both came back, the half that cost more is masked). A view that read a
  /// code is doing its job, however much it cost (a dense pass, a loaded machine): it is never
  /// suspect, and a half that read one is never masked.
  public mutating func completed(cost: Int = 0, found: Bool = false) {
    guard let visible = inFlight else { return }
    // A whole view that comes back is never suspect, however slow: only a decode abandoned at its
    // deadline starts a search. (A rule that searched slow views misfired on a loaded machine,
    // where an empty view's decode can take ten times its usual CPU time: docs/decoder.md.) Its
    // cost is the typical one a recheck is judged against.
    if inFlightGroups == 0 && inFlightParent == 0 {
      typicalCost = typicalSamples == 0 ? cost : (typicalCost * 7 + cost) / 8
      typicalSamples = min(typicalSamples + 1, 1 << 20)
    }
    inFlight = nil
    if inFlightGroups != 0 {
      if !found && cost > max(settings.recheckCostMax, 2 * typicalCost) {
        softFailures += 1
        if softFailures < settings.softFailuresMax {
          failedRecheck(visible, at: lastPlanned)
          return
        }
      }
      softFailures = 0
      for g in stride(from: groupCount - 1, through: 0, by: -1) where inFlightGroups & (1 << UInt8(g)) != 0 { unmask(g) }
      unmasked &+= 1
      recheckBackoff = 0
      return
    }
    guard inFlightParent != 0, let i = openIndex(inFlightParent) else { return }
    open[i].clean += 1
    if open[i].clean == 1 {
      open[i].firstHalf = visible
      open[i].firstCost = cost
      open[i].firstFound = found
      return
    }
    let (first, firstFound, root, tiles) = (open[i].firstHalf, open[i].firstFound, open[i].root, open[i].tiles)
    let heavier = open[i].firstCost > cost ? first : visible
    closeOpen(i)
    // A half that read a code holds a badge: never masked. The other is, if it read none; both
    // read codes: nothing here is hostile.
    if found || firstFound {
      if !(found && firstFound) { mask(found ? first : visible) }
      return
    }
    // A set below the whole view is masked whole; the whole view never is (it holds the badge
    // too): its costlier half is, and a view still slow after that is searched again.
    mask(root ? heavier : tiles)
  }

  /// The frame in flight was abandoned at its deadline (or its worker died decoding it): some
  /// tile it showed holds what stops the decoder.
  public mutating func abandoned(at now: Instant) {
    guard let visible = inFlight else { return }
    inFlight = nil
    if inFlightGroups != 0 {
      softFailures = 0
      failedRecheck(visible, at: now)
      return
    }
    // The set this was half of is explained by this half: it is no longer open.
    if inFlightParent != 0, let i = openIndex(inFlightParent) { closeOpen(i) }
    if inFlightParent == 0 {
      // Once may be a passing frame (a worker that died on it): the next whole view tells. A
      // second strike within 10 s starts the search.
      if now.milliseconds(since: lastRootStrike) > 10_000 { rootStrikes = 0 }
      rootStrikes += 1
      lastRootStrike = now
      guard rootStrikes >= 2 else { return }
      rootStrikes = 0
      searches &+= 1
    }
    if visible.nonzeroBitCount <= 2 || pendingCount + 2 > pending.count || openCount == open.count {
      mask(visible)
      if recheckAt < now { recheckAt = now.adding(milliseconds: settings.recheckMinMilliseconds) }
      return
    }
    let (first, second) = Self.split(visible)
    open[openCount] = (visible, 0, 0, 0, false, inFlightParent == 0)
    openCount += 1
    pending[pendingCount] = (second, visible)
    pending[pendingCount + 1] = (first, visible)  // decoded next
    pendingCount += 2
  }

  /// A recheck found the pattern still there: looked at again after a longer wait, compared with
  /// how it looks now.
  private mutating func failedRecheck(_ visible: UInt16, at now: Instant) {
    recheckBackoff = min(settings.recheckMaxMilliseconds, recheckBackoff == 0 ? settings.recheckMinMilliseconds : recheckBackoff * 2)
    recheckAt = now.adding(milliseconds: recheckBackoff)
    for t in 0..<Self.tileCount where visible & masked & (1 << UInt16(t)) != 0 { maskedLooks[t] = inFlightLooks[t] }
  }

  private mutating func mask(_ tiles: UInt16) {
    let added = tiles & ~masked
    guard added != 0 else { return }
    if groupCount == groups.count {
      groups[groupCount - 1] |= added  // full: the last group grows (never unbounded)
    } else {
      groups[groupCount] = added
      groupCount += 1
    }
    masked |= added
    for t in 0..<Self.tileCount where added & (1 << UInt16(t)) != 0 { maskedLooks[t] = inFlightLooks[t] }
    if recheckAt < lastPlanned { recheckAt = lastPlanned.adding(milliseconds: settings.recheckMinMilliseconds) }
  }

  private mutating func unmask(_ g: Int) {
    masked &= ~groups[g]
    for k in g..<(groupCount - 1) { groups[k] = groups[k + 1] }
    groupCount -= 1
  }

  private func openIndex(_ tiles: UInt16) -> Int? {
    for i in 0..<openCount where open[i].tiles == tiles { return i }
    return nil
  }

  private mutating func closeOpen(_ i: Int) {
    for k in i..<(openCount - 1) { open[k] = open[k + 1] }
    openCount -= 1
  }

  /// `tiles` cut in two along the longer side of the tiles' bounding box (columns on a tie).
  package static func split(_ tiles: UInt16) -> (UInt16, UInt16) {
    var c0 = columns, c1 = -1, r0 = rows, r1 = -1
    for t in 0..<tileCount where tiles & (1 << UInt16(t)) != 0 {
      c0 = min(c0, t % columns)
      c1 = max(c1, t % columns)
      r0 = min(r0, t / columns)
      r1 = max(r1, t / columns)
    }
    let byColumns = c1 - c0 >= r1 - r0
    let middle = byColumns ? (c0 + c1 + 1) / 2 : (r0 + r1 + 1) / 2
    var first: UInt16 = 0
    for t in 0..<tileCount where tiles & (1 << UInt16(t)) != 0 && (byColumns ? t % columns : t / columns) < middle {
      first |= 1 << UInt16(t)
    }
    return (first, tiles & ~first)
  }

  /// Tile `t`'s rectangle in a `width` × `height` view.
  public static func rect(_ t: Int, width: Int, height: Int) -> (x: Int, y: Int, width: Int, height: Int) {
    let c = t % columns, r = t / columns
    let x0 = c * width / columns, x1 = (c + 1) * width / columns
    let y0 = r * height / rows, y1 = (r + 1) * height / rows
    return (x0, y0, x1 - x0, y1 - y0)
  }

  /// Fills every tile not in `visible` with flat gray (`gray`: `width` × `height`, a byte a pixel).
  public static func blank(_ gray: UnsafeMutableRawBufferPointer, width: Int, height: Int, keeping visible: UInt16) {
    guard visible != everyTile else { return }
    for t in 0..<tileCount where visible & (1 << UInt16(t)) == 0 {
      let r = rect(t, width: width, height: height)
      for y in r.y..<(r.y + r.height) {
        UnsafeMutableRawBufferPointer(rebasing: gray[(y * width + r.x)..<(y * width + r.x + r.width)]).initializeMemory(
          as: UInt8.self, repeating: maskLevel)
      }
    }
  }

  /// The bounding box of `tiles` in a `width` × `height` view (nil when none).
  public static func bounds(_ tiles: UInt16, width: Int, height: Int) -> (x: Int, y: Int, width: Int, height: Int)? {
    var x0 = Int.max, y0 = Int.max, x1 = -1, y1 = -1
    for t in 0..<tileCount where tiles & (1 << UInt16(t)) != 0 {
      let r = rect(t, width: width, height: height)
      x0 = min(x0, r.x)
      y0 = min(y0, r.y)
      x1 = max(x1, r.x + r.width)
      y1 = max(y1, r.y + r.height)
    }
    return x1 < 0 ? nil : (x0, y0, x1 - x0, y1 - y0)
  }

  /// Tile `t`'s look, from every 4th pixel of every 4th row and its right neighbour.
  static func look(_ t: Int, gray: UnsafeRawBufferPointer, width: Int, height: Int) -> Look {
    let r = rect(t, width: width, height: height)
    guard r.width >= 8, r.height >= 4, gray.count >= width * height else { return Look() }
    var sum = 0, edges = 0, n = 0
    var y = r.y
    while y < r.y + r.height {
      var x = r.x
      while x + 1 < r.x + r.width {
        let a = Int(gray[y * width + x]), b = Int(gray[y * width + x + 1])
        sum += a
        edges += abs(a - b)
        n += 1
        x += 4
      }
      y += 4
    }
    guard n > 0 else { return Look() }
    return Look(mean: UInt8(sum / n), edges: UInt8(min(255, edges / n)))
  }

  /// Whether a masked tile looks different enough to be tried again at once: its light moved by
  /// more than 40 levels, or it lost three quarters of its edges (the sheet is gone, a wall
  /// shows; a sheet of another module size keeps enough of them).
  static func changed(_ then: Look, _ now: Look) -> Bool {
    abs(Int(then.mean) - Int(now.mean)) > 40 || Int(now.edges) * 4 < Int(then.edges)
  }
}

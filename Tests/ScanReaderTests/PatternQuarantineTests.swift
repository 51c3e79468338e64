import ScanBase
import ScanReader
import Testing

/// The search for a part of the view that stops the decoder (docs/decoder.md, "A pattern in
/// view"), on a simulated decoder: tiles listed as hostile make a decode that shows any of them
/// abandoned; everything else comes back.
@Suite struct PatternQuarantineTests {
  static let width = 640, height = 480

  /// Runs `frames` frames of `picture` through the quarantine with `hostile` tiles; returns the
  /// tiles each frame showed.
  /// A decode is abandoned when it shows both tiles of a hostile pair (a strip of a sheet
  /// decodes in time; the sheet does not), or any tile of `single`.
  static func run(
    _ q: inout PatternQuarantine, hostile: UInt16, frames: Int, picture: [UInt8], from start: Int = 0, wholeOnly: Bool = false
  ) -> [UInt16] {
    var shown: [UInt16] = []
    var frame = picture
    for i in start..<(start + frames) {
      let now = Instant(nanoseconds: UInt64(i) * 50_000_000)
      let visible = frame.withUnsafeBytes { q.plan(at: now, gray: $0, width: width, height: height) }
      shown.append(visible)
      frame = picture
      frame.withUnsafeMutableBytes { PatternQuarantine.blank($0, width: width, height: height, keeping: visible) }
      let stops = wholeOnly ? (visible & hostile).nonzeroBitCount >= 4 : visible & hostile != 0
      // A decode's cost: 10 for each hostile tile it shows, 1 for each other.
      let cost = (visible & hostile).nonzeroBitCount * 10 + (visible & ~hostile).nonzeroBitCount
      if stops { q.abandoned(at: now) } else { q.completed(cost: cost) }
    }
    return shown
  }

  static func sheet(over tiles: UInt16) -> [UInt8] {
    var p = [UInt8](repeating: 200, count: width * height)
    for t in 0..<16 where tiles & (1 << UInt16(t)) != 0 {
      let r = PatternQuarantine.rect(t, width: width, height: height)
      for y in r.y..<(r.y + r.height) {
        for x in r.x..<(r.x + r.width) { p[y * width + x] = (x / 3 + y / 3) % 2 == 0 ? 0 : 255 }
      }
    }
    return p
  }

  static let leftHalf: UInt16 = 0b0011_0011_0011_0011

  @Test("a sheet over the left half: found within 8 abandoned decodes, masked; the right half is read on the other frames")
  func leftHalf() {
    for wholeOnly in [false, true] {
      var q = PatternQuarantine()
      // The first frame shows everything (nothing known yet) and is abandoned.
      let shown = Self.run(&q, hostile: Self.leftHalf, frames: 40, picture: Self.sheet(over: Self.leftHalf), wholeOnly: wholeOnly)
      // Every hostile tile masked; when only the whole sheet stops the decoder, enough of it.
      #expect(
        wholeOnly ? q.masked & ~Self.leftHalf == 0 && (Self.leftHalf & ~q.masked).nonzeroBitCount < 4 : q.masked == Self.leftHalf,
        "masked \(String(q.masked, radix: 16)) (whole only: \(wholeOnly))")
      let search = shown.prefix { $0 != ~q.masked }
      #expect(search.count <= 16, "the search took \(search.map { String($0, radix: 16) })")
      let read = shown.filter { $0 & ~Self.leftHalf == ~Self.leftHalf }.count
      #expect(read >= 28, "the right half is read on \(read) of 40 frames (whole only: \(wholeOnly))")
    }
  }

  @Test("a sheet that stops the decoder only whole (each half decodes in time): the costlier half is masked, never the badge's")
  func costlierHalf() {
    var q = PatternQuarantine()
    // Hostile only when 8 or more of the sheet's tiles show: each half of the view comes back.
    var shown: [UInt16] = []
    let picture = Self.sheet(over: Self.leftHalf)
    for i in 0..<40 {
      let now = Instant(nanoseconds: UInt64(i) * 50_000_000)
      let visible = picture.withUnsafeBytes { q.plan(at: now, gray: $0, width: Self.width, height: Self.height) }
      shown.append(visible)
      if (visible & Self.leftHalf).nonzeroBitCount >= 8 && visible & ~Self.leftHalf != 0 {
        q.abandoned(at: now)
      } else {
        q.completed(cost: (visible & Self.leftHalf).nonzeroBitCount * 10 + (visible & ~Self.leftHalf).nonzeroBitCount)
      }
    }
    #expect(q.masked & ~Self.leftHalf == 0 && q.masked != 0, "masked \(String(q.masked, radix: 16)): never the right half")
    #expect(shown.suffix(10).allSatisfy { $0 & ~Self.leftHalf == ~Self.leftHalf || $0 & ~Self.leftHalf == 0 })
  }

  @Test("a dense code read now and then at ten times the usual cost (a signed pass, a loaded machine): never searched, never masked")
  func denseCodeIsNoSuspect() {
    var q = PatternQuarantine()
    let picture = Self.sheet(over: 0)
    for i in 0..<400 {
      let now = Instant(nanoseconds: UInt64(i) * 50_000_000)
      let visible = picture.withUnsafeBytes { q.plan(at: now, gray: $0, width: Self.width, height: Self.height) }
      // Every 20th frame shows the pass and reads it; it costs 80 where a view costs 4.
      let pass = i % 20 == 19
      q.completed(cost: pass ? 80 : visible.nonzeroBitCount / 4, found: pass)
    }
    #expect(q.masked == 0 && !q.isActive && q.searches == 0, "masked \(String(q.masked, radix: 16)), searches \(q.searches)")
  }

  @Test("a search whose costlier half read a code masks the other half; both halves with codes mask nothing")
  func halfWithACodeIsKept() {
    for bothRead in [false, true] {
      var q = PatternQuarantine()
      let picture = Self.sheet(over: Self.leftHalf)
      var firstSearchMasked: UInt16? = nil
      for i in 0..<60 where firstSearchMasked == nil {
        let now = Instant(nanoseconds: UInt64(i) * 50_000_000)
        let visible = picture.withUnsafeBytes { q.plan(at: now, gray: $0, width: Self.width, height: Self.height) }
        if visible == PatternQuarantine.everyTile {
          q.abandoned(at: now)  // the whole view stops the decoder; each half comes back
        } else {
          // The left half (the sheet) costs more and, here, holds a badge read in it too.
          let left = visible & Self.leftHalf != 0
          q.completed(cost: left ? 80 : 4, found: left || bothRead)
        }
        if q.masked != 0 || (q.searches > 0 && !q.isActive) { firstSearchMasked = q.masked }
      }
      if bothRead {
        #expect(firstSearchMasked == 0, "both halves read codes: \(String(firstSearchMasked ?? 0xFFFF, radix: 16))")
      } else {
        #expect(firstSearchMasked == ~Self.leftHalf, "the half without a code: \(String(firstSearchMasked ?? 0, radix: 16))")
      }
    }
  }

  @Test("a slower machine (every whole view costs 60, nothing stops the decoder): nothing is ever masked")
  func slowMachine() {
    var q = PatternQuarantine()
    let picture = Self.sheet(over: 0)
    for i in 0..<400 {
      let now = Instant(nanoseconds: UInt64(i) * 50_000_000)
      let visible = picture.withUnsafeBytes { q.plan(at: now, gray: $0, width: Self.width, height: Self.height) }
      q.completed(cost: visible.nonzeroBitCount * 60 / 16)
    }
    #expect(q.masked == 0 && !q.isActive && q.typicalCost == 60, "masked \(String(q.masked, radix: 16)), typical \(q.typicalCost)")
  }

  @Test("a mask whose rechecks keep coming back just over their cost is dropped after 8 of them, never kept for good")
  func wrongMaskIsDropped() {
    var q = PatternQuarantine()
    _ = Self.run(&q, hostile: Self.leftHalf, frames: 30, picture: Self.sheet(over: Self.leftHalf))
    #expect(q.masked == Self.leftHalf)
    // The pattern no longer stops the decoder, but a view with it still costs 30 (over 25).
    let picture = Self.sheet(over: Self.leftHalf)
    for i in 30..<1_000 {
      let now = Instant(nanoseconds: UInt64(i) * 50_000_000)
      let visible = picture.withUnsafeBytes { q.plan(at: now, gray: $0, width: Self.width, height: Self.height) }
      q.completed(cost: visible & Self.leftHalf != 0 ? 30 : 2)
    }
    #expect(q.masked == 0, "masked \(String(q.masked, radix: 16)) after 48 s")
  }

  @Test("the blanked tiles are flat gray; the shown ones untouched")
  func blanking() {
    var p = Self.sheet(over: PatternQuarantine.everyTile)
    let before = p
    p.withUnsafeMutableBytes { PatternQuarantine.blank($0, width: Self.width, height: Self.height, keeping: 0b1) }
    #expect(p[0] == before[0] && p[159] == before[159] && p[160] == PatternQuarantine.maskLevel)
    #expect(p[(Self.height - 1) * Self.width + Self.width - 1] == PatternQuarantine.maskLevel)
  }

  @Test("the sheet taken down: its tiles are tried at once (their look changed) and unmasked")
  func recovers() {
    var q = PatternQuarantine()
    _ = Self.run(&q, hostile: Self.leftHalf, frames: 30, picture: Self.sheet(over: Self.leftHalf))
    #expect(q.masked == Self.leftHalf)
    let shown = Self.run(&q, hostile: 0, frames: 20, picture: Self.sheet(over: 0), from: 30)
    #expect(q.masked == 0, "unmasked after \(shown.map { String($0, radix: 16) })")
  }

  @Test("still there: a masked tile is tried again after a back-off (1 s, doubling to 4 s), never every frame")
  func recheckBackoff() {
    var q = PatternQuarantine()
    let shown = Self.run(&q, hostile: Self.leftHalf, frames: 400, picture: Self.sheet(over: Self.leftHalf))
    let rechecks = shown.dropFirst(40).filter { $0 & Self.leftHalf != 0 }.count
    #expect(q.masked == Self.leftHalf && rechecks >= 3 && rechecks <= 8, "\(rechecks) rechecks in 18 s")
  }

  @Test("halves split along the longer side")
  func split() {
    let (a, b) = PatternQuarantine.split(PatternQuarantine.everyTile)
    #expect(a == Self.leftHalf && b == ~Self.leftHalf)
    let (c, d) = PatternQuarantine.split(Self.leftHalf)
    #expect(c == 0b0000_0000_0011_0011 && d == 0b0011_0011_0000_0000)
  }
}

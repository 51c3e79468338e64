import ScanBase
import ScanKeypad
import Testing

/// The PIN entry and the wrong-PIN counts on their own, on a manual clock (docs/admin.md, "PIN").
@Suite struct PinEntryTests {
  func at(_ ms: Int) -> Instant { Instant(nanoseconds: 1_000_000_000).adding(milliseconds: ms) }

  func typed(_ e: PinEntry) -> String { e.withDigits { String(decoding: $0, as: UTF8.self) } }

  @Test("digits collect, enter submits 4–12 of them; clear starts again; nothing is taken before begin")
  func entry() {
    var e = PinEntry(timeoutMilliseconds: 10_000)
    #expect(e.press(.digit(1), at: at(0)) == nil && e.count == 0)  // no entry: ignored
    e.begin(at: at(0))
    for d: UInt8 in [1, 2] { #expect(e.press(.digit(d), at: at(100)) == nil) }
    #expect(e.press(.enter, at: at(200)) == .malformed)  // 2 digits
    e.begin(at: at(300))
    for d: UInt8 in [9, 9] { _ = e.press(.digit(d), at: at(400)) }
    #expect(e.press(.clear, at: at(500)) == nil && e.count == 0)
    for d: UInt8 in [2, 4, 6, 8] { _ = e.press(.digit(d), at: at(600)) }
    #expect(e.press(.enter, at: at(700)) == .submitted)
    #expect(typed(e) == "2468")
    e.end()
    #expect(!e.active && e.count == 0 && typed(e).isEmpty)
  }

  @Test("a 13th digit makes the entry malformed (never silently cut to 12)")
  func tooLong() {
    var e = PinEntry(timeoutMilliseconds: 10_000)
    e.begin(at: at(0))
    for _ in 0..<13 { _ = e.press(.digit(7), at: at(10)) }
    #expect(e.count == 12)
    #expect(e.press(.enter, at: at(20)) == .malformed)
  }

  @Test("the timeout runs from the pass and again from each key")
  func timeout() {
    var e = PinEntry(timeoutMilliseconds: 10_000)
    e.begin(at: at(0))
    #expect(e.expire(at: at(9_999)) == nil)
    _ = e.press(.digit(1), at: at(9_999))
    #expect(e.expire(at: at(19_998)) == nil)
    #expect(e.expire(at: at(19_999)) == .timedOut)
    #expect(e.press(.digit(2), at: at(20_000)) == .timedOut)  // a key after the deadline is too late
  }

  static let alice = Digest(words: (1, 2, 3, 4)), bob = Digest(words: (5, 6, 7, 8))

  @Test("three wrong in a row lock out for the lockout; a right PIN clears the count; others are counted apart")
  func attempts() {
    var a = PinAttempts(capacity: 4, attemptsMax: 3, lockoutSeconds: 300)
    let lockedAtFirst = a.isLocked(Self.alice, now: 1_000)
    let first = a.fail(Self.alice, now: 1_000).locked
    let second = a.fail(Self.alice, now: 1_001).locked
    _ = a.succeed(Self.alice)  // the right PIN: the count starts again
    let afterRight = a.fail(Self.alice, now: 1_002).locked
    let bob = a.fail(Self.bob, now: 1_003).locked
    let fourth = a.fail(Self.alice, now: 1_004).locked
    let third = a.fail(Self.alice, now: 1_005)
    let until = a.entry(third.slot).lockedUntil
    let during = a.isLocked(Self.alice, now: 1_304), after = a.isLocked(Self.alice, now: 1_305)
    let bobLocked = a.isLocked(Self.bob, now: 1_100), lockedCount = a.lockedCount(now: 1_100)
    let again = a.fail(Self.alice, now: 1_400).locked  // after the lockout the count starts from nothing
    #expect(!lockedAtFirst && !first && !second && !afterRight && !bob && !fourth)
    #expect(third.locked && until == 1_305)
    #expect(during && !after)
    #expect(!bobLocked && lockedCount == 1)
    #expect(!again)
  }

  @Test("a full table reuses a slot whose lockout ended before one that is locked now")
  func fullTable() {
    var a = PinAttempts(capacity: 2, attemptsMax: 1, lockoutSeconds: 100)
    _ = a.fail(Self.alice, now: 0)  // locked until 100
    _ = a.fail(Self.bob, now: 50)  // locked until 150
    let carol = Digest(words: (9, 9, 9, 9))
    _ = a.fail(carol, now: 120)  // alice's lockout has ended: her slot goes
    let bob = a.isLocked(Self.bob, now: 120), c = a.isLocked(carol, now: 120), alice = a.isLocked(Self.alice, now: 120)
    #expect(bob && c && !alice)
  }

  @Test("Linux key codes: number row, keypad, enter, clear (values of linux/input-event-codes.h)")
  func linuxCodes() {
    #expect(KeypadKey(linuxCode: 2) == .digit(1) && KeypadKey(linuxCode: 11) == .digit(0))
    #expect(KeypadKey(linuxCode: 79) == .digit(1) && KeypadKey(linuxCode: 81) == .digit(3) && KeypadKey(linuxCode: 75) == .digit(4))
    #expect(KeypadKey(linuxCode: 73) == .digit(9) && KeypadKey(linuxCode: 82) == .digit(0))
    #expect(KeypadKey(linuxCode: 96) == .enter && KeypadKey(linuxCode: 28) == .enter && KeypadKey(linuxCode: 14) == .clear)
    #expect(KeypadKey(linuxCode: 30) == nil)  // KEY_A
  }
}

import ScanConsole
import ScanCore
import ScanSim
import Testing

@Suite struct ConsoleRequestTests {
  func parse(_ text: String) -> (Result<ConsoleRequest, ConsoleError>?, [UInt8]) {
    var storage = [UInt8](repeating: 0, count: 512)
    var count = 0
    let result = Array(text.utf8).withUnsafeBytes { line in
      storage.withUnsafeMutableBytes { ConsoleRequest.parse(line, argument: $0, argumentCount: &count) }
    }
    return (result, Array(storage[0..<count]))
  }

  func request(_ text: String) -> ConsoleRequest? {
    if case .success(let r)? = parse(text).0 { return r }
    return nil
  }

  func error(_ text: String) -> ConsoleError? {
    if case .failure(let e)? = parse(text).0 { return e }
    return nil
  }

  @Test("verbs are case-insensitive; words split on spaces and tabs")
  func verbs() {
    #expect(request("status")?.verb == .status)
    #expect(request("  StAtUs  ")?.verb == .status)
    #expect(request("LAST\t12")?.number == 12)
    #expect(request("last")?.number == nil)
    #expect(request("WATCH on")?.flag == true)
    #expect(request("watch OFF")?.flag == false)
    #expect(request("OPEN 2500")?.number == 2500)
    #expect(request("snapshot text")?.flag == true)
    #expect(parse("   ").0 == nil)
  }

  @Test("CHECK and AUTH arguments are percent-unescaped")
  func arguments() {
    let (result, argument) = parse("CHECK EVIL%0D%0AOK%20%1B[2J")
    if case .success(let r)? = result { #expect(r.verb == .check) } else { Issue.record("not parsed") }
    #expect(argument == Array("EVIL\r\nOK \u{1b}[2J".utf8))
    #expect(parse("AUTH s3cret").1 == Array("s3cret".utf8))
  }

  @Test(
    "malformed lines are rejected whole",
    arguments: [
      ("STATUS\u{0}", 400), ("STA\u{1b}[2JTUS", 400), ("OPEN\r", 400), ("BOGUS", 400), ("OPEN 1 2 3", 400),
      ("LAST x", 400), ("LAST 0", 400), ("OPEN 99999999", 400), ("WATCH maybe", 400), ("WATCH", 400),
      ("CHECK %zz", 400), ("CHECK", 400), ("STATUS now", 400), ("caf\u{e9}", 400),
    ])
  func rejects(text: String, code: Int) {
    #expect(error(text)?.code == code, "\(text)")
  }

  @Test("operator verbs are marked")
  func operatorVerbs() {
    // Acting on the door, or showing a credential (log bodies, frames, CHECK's answers), or
    // managing the people on the allow-list.
    #expect(
      Set(ConsoleVerb.allCases.filter(\.needsOperator)) == [
        .open, .reload, .selftest, .log, .snapshot, .check, .enrol, .remove, .list, .importList, .backup, .pin, .passes,
      ])
  }

  @Test("BACKUP <64 hex> <32 hex> <ops> <KiB>: the key and salt as 48 bytes, the limits; anything else refused")
  func backup() {
    let key = String(repeating: "0a", count: 32), salt = String(repeating: "F1", count: 16)
    var argument = [UInt8](repeating: 0, count: 512)
    var count = 0
    func parse(_ line: String) -> ConsoleRequest? {
      let bytes = Array(line.utf8)
      let result = bytes.withUnsafeBytes { l in argument.withUnsafeMutableBytes { ConsoleRequest.parse(l, argument: $0, argumentCount: &count) } }
      guard case .success(let request)? = result else { return nil }
      return request
    }
    let request = parse("BACKUP \(key) \(salt) 3 131072")
    #expect(request?.verb == .backup && request?.sealing == BackupSealing(ops: 3, mem: 128 << 20) && request?.needsOperator == true)
    #expect(count == 48 && argument[0] == 0x0A && argument[31] == 0x0A && argument[32] == 0xF1 && argument[47] == 0xF1)
    for bad in [
      "BACKUP", "BACKUP \(key) \(salt) 3", "BACKUP \(key)0 \(salt) 3 1", "BACKUP \(key) \(salt)zz 3 1", "BACKUP \(key) \(salt) x 1",
      "BACKUP \(String(repeating: "g0", count: 32)) \(salt) 3 1", "BACKUP \(key) \(salt) 3 99999999", "BACKUP \(key) \(salt) 3 1 more",
    ] {
      #expect(parse(bad) == nil, "\(bad)")
    }
  }
}

@Suite struct AuthGateTests {
  let peer = PeerKey(high: 1, low: 2)

  @Test("failures back off exponentially, then lock out; success clears")
  func backoffAndLockout() {
    let clock = ManualClock()
    var settings = AuthGate.Settings()
    settings.failuresMax = 4
    settings.lockoutSeconds = 60
    var gate = AuthGate(settings: settings)
    #expect(gate.admit(peer, at: clock.now()) == .allowed)
    gate.recordFailure(peer, at: clock.now())
    #expect(gate.admit(peer, at: clock.now()) == .backingOff(milliseconds: 1_001))
    clock.advance(milliseconds: 1_000)
    #expect(gate.admit(peer, at: clock.now()) == .allowed)
    gate.recordFailure(peer, at: clock.now())
    clock.advance(milliseconds: 1_500)
    #expect(gate.admit(peer, at: clock.now()) == .backingOff(milliseconds: 501))  // 2 s after the 2nd
    clock.advance(milliseconds: 500)
    gate.recordFailure(peer, at: clock.now())
    clock.advance(milliseconds: 4_000)
    gate.recordFailure(peer, at: clock.now())  // the 4th: locked out
    if case .lockedOut(let ms) = gate.admit(peer, at: clock.now()) { #expect(ms > 59_000) } else { Issue.record("not locked") }
    // Another peer is not affected.
    #expect(gate.admit(PeerKey(high: 9, low: 9), at: clock.now()) == .allowed)
    clock.advance(milliseconds: 60_001)
    #expect(gate.admit(peer, at: clock.now()) == .allowed)
    gate.recordFailure(peer, at: clock.now())
    gate.recordSuccess(peer)
    #expect(gate.admit(peer, at: clock.now()) == .allowed)
  }

  @Test("a full table reuses the record idle longest, never grows")
  func bounded() {
    let clock = ManualClock()
    var gate = AuthGate(settings: AuthGate.Settings(), capacity: 4)
    for i in 0..<10 {
      gate.recordFailure(PeerKey(high: 0, low: UInt64(i)), at: clock.now())
      clock.advance(milliseconds: 10)
    }
    #expect(gate.admit(PeerKey(high: 0, low: 9), at: clock.now()) != .allowed)
    #expect(gate.admit(PeerKey(high: 0, low: 0), at: clock.now()) == .allowed)
  }

}

extension ConsoleRequestTests {
  @Test("LOCKDOWN and TURNSTILE: the bare verbs read state; ON/OFF, FORGIVE and RESET are operator actions; bad forms refused")
  func lockdownAndTurnstile() {
    #expect(request("lockdown")?.action == .show && request("lockdown")?.needsOperator == false)
    #expect(request("LOCKDOWN on")?.action == .lockdownOn && request("LOCKDOWN on")?.needsOperator == true)
    #expect(request("lockdown OFF")?.action == .lockdownOff)
    #expect(error("LOCKDOWN MAYBE") == .badArgument)
    #expect(error("LOCKDOWN ON NOW") == .tooManyArguments)
    #expect(request("turnstile")?.action == .show && request("turnstile")?.needsOperator == false)
    #expect(request("TURNSTILE RESET")?.action == .resetOccupancy && request("TURNSTILE RESET")?.needsOperator == true)
    #expect(request("turnstile forgive last")?.action == .forgiveLast)
    #expect(request("TURNSTILE FORGIVE 7fb7666e5481daa1")?.action == .forgiveTag(0x7fb7_666e_5481_daa1))
    #expect(request("TURNSTILE FORGIVE 7FB7666E5481DAA1")?.action == .forgiveTag(0x7fb7_666e_5481_daa1))
    #expect(error("TURNSTILE FORGIVE 7fb7666e5481daa") == .badArgument)  // 15 digits
    #expect(error("TURNSTILE FORGIVE 7fb7666e5481daag") == .badArgument)
    #expect(error("TURNSTILE FORGIVE") == .badArgument)
    #expect(error("TURNSTILE OPEN 5") == .badArgument)
  }
}

extension ConsoleRequestTests {
  @Test("LOG's filters: each at most once, names exactly as the log keeps them, labels unescaped; bad forms refused whole")
  func logFilters() {
    let plain = request("LOG")
    #expect(plain?.log == AuditQuery(count: 10))
    #expect(request("LOG 500")?.log.count == 100)
    let r = request("log 50 before=812 since=1764900000 until=1764990000 verdict=denied-unknown kind=decision label=ivy%20smith")
    #expect(r?.log.count == 50)
    #expect(r?.log.before == 812)
    #expect(r?.log.since == 1_764_900_000 && r?.log.until == 1_764_990_000)
    #expect(r?.log.verdict == .deniedUnknown && r?.log.kind == .decision)
    #expect(r?.log.labelText == "ivy smith")
    // Filters alone (the count first or not at all).
    #expect(request("LOG verdict=granted")?.log.verdict == .granted)
    #expect(request("LOG verdict=granted")?.log.count == 10)
    #expect(request("LOG kind=door-forced")?.log.kind == .doorForced)
    for bad in [
      "LOG verdict=GRANTED", "LOG verdict=granted verdict=granted", "LOG before=-1", "LOG before=1234567890123",
      "LOG since=soon", "LOG kind=nothing", "LOG label=", "LOG label=a%2", "LOG label=a%00b%zz", "LOG 0", "LOG before=5 10",
      "LOG label=" + String(repeating: "x", count: 49), "LOG 1 2", "LOG payload=ALICE",
      "LOG 1 before=1 since=1 until=2 verdict=granted kind=decision label=a extra",
    ] {
      #expect(error(bad)?.code == 400, "\(bad)")
    }
  }
}

import ScanCore
import ScanLinux
@testable import ScanAdminLinux
import Testing

/// The web page's sessions and sign-in limits (docs/admin.md, "The web page"), on a clock the
/// test moves; and the form and cookie parsing every request goes through.
@Suite struct AdminSessionsTests {
  let alice = AdminAccounts.Account(name: "alice", role: .operator, hash: "$argon2id$x")

  @Test("a session: a 256-bit token and its own CSRF token; ends unused after the idle time, and after 12 hours in all")
  func expiry() {
    let s = AdminSessions(idleMinutes: 30)
    let (token, session) = s.open(alice, now: 1000)
    #expect(token.utf8.count == 64 && session.csrf.utf8.count == 64 && token != session.csrf)
    #expect(s.open(alice, now: 1000).token != token, "every sign-in a new token")
    // The times as typed constants: Swift 6.2.3 (Debian's) gave up type-checking the literal sums.
    let used: Int64 = 1000 + 29 * 60
    let kept: Int64 = used + 30 * 60 - 1
    #expect(s.session(token, now: used)?.name == "alice")
    #expect(s.session(token, now: kept) != nil, "use keeps it alive")
    #expect(s.session(token, now: kept + 1800) == nil, "30 minutes unused: gone")
    let (long, _) = s.open(alice, now: 0)
    var t: Int64 = 0
    while t < 12 * 3600 - 600 {
      t += 600
      #expect(s.session(long, now: t) != nil)
    }
    #expect(s.session(long, now: 12 * 3600) == nil, "12 hours in all, however busy")
    #expect(s.session(String(repeating: "0", count: 64), now: 0) == nil && s.session(nil, now: 0) == nil)
    let (closed, _) = s.open(alice, now: 5)
    s.close(closed)
    #expect(s.session(closed, now: 5) == nil)
    let (clockBack, _) = s.open(alice, now: 10_000)
    #expect(s.session(clockBack, now: 9_000) == nil, "a clock set back ends it rather than stretching it")
  }

  @Test("sign-in limits: four free tries, then 2 s, 4 s, 8 s ... per account and per client; a success clears both")
  func backoff() {
    let s = AdminSessions(idleMinutes: 30)
    for _ in 0..<4 { s.failed(client: "10.0.0.9", name: "alice", now: 100) }
    #expect(s.waitBeforeTry(client: "10.0.0.9", name: "alice", now: 100) == 0)
    s.failed(client: "10.0.0.9", name: "alice", now: 100)
    #expect(s.waitBeforeTry(client: "10.0.0.9", name: "alice", now: 100) == 2)
    #expect(s.waitBeforeTry(client: "10.0.0.7", name: "alice", now: 100) == 2, "another client: the account still waits")
    #expect(s.waitBeforeTry(client: "10.0.0.9", name: "bob", now: 100) == 2, "another account: the client still waits")
    #expect(s.waitBeforeTry(client: "10.0.0.7", name: "bob", now: 100) == 0)
    s.failed(client: "10.0.0.9", name: "alice", now: 101)
    s.failed(client: "10.0.0.9", name: "alice", now: 103)
    #expect(s.waitBeforeTry(client: "10.0.0.9", name: "alice", now: 103) == 8)
    for i in 0..<30 { s.failed(client: "10.0.0.9", name: "alice", now: 200 + Int64(i)) }
    #expect(s.waitBeforeTry(client: "10.0.0.9", name: "alice", now: 229) == 15 * 60, "at most 15 minutes")
    s.succeeded(client: "10.0.0.9", name: "alice")
    #expect(s.waitBeforeTry(client: "10.0.0.9", name: "alice", now: 229) == 0)
  }

  @Test("at most 64 sessions (the least recently used goes) and 256 failure counters")
  func bounded() {
    let s = AdminSessions(idleMinutes: 30)
    let (first, _) = s.open(alice, now: 0)
    var tokens: [String] = []
    for i in 1...64 { tokens.append(s.open(alice, now: Int64(i)).token) }
    #expect(s.session(first, now: 65) == nil && s.session(tokens.last, now: 65) != nil)
    for i in 0..<1000 { s.failed(client: "10.0.\(i / 256).\(i % 256)", name: "n\(i)", now: Int64(i)) }
    #expect(s.waitBeforeTry(client: "10.0.3.231", name: "n999", now: 999) == 0, "one failure each: no wait, and memory bounded")
  }

  @Test("forms and cookies: percent escapes and '+', a bad escape drops its field; the named cookie only")
  func parsing() {
    let r = HTTPRequest(method: "POST", path: "/login", cookie: "a=1; sg_session=abc; b=2", body: Array("name=ivy+smith&password=p%26w%3D&bad=%zz&x".utf8))
    #expect(r.form == ["name": "ivy smith", "password": "p&w="])
    #expect(r.cookie("sg_session") == "abc" && r.cookie("session") == nil)
  }
}

@Suite struct AdminPagesTests {
  let operatorSession = AdminSessions.Session(name: "olga", role: .operator, csrf: "c5rf", created: 0, used: 0)

  func replies(turnstile: (body: [String], status: String)) -> [(body: [String], status: String)] {
    [(["camera streaming"], "OK status"), (["door closed"], "OK door"), ([], "OK fire inactive, lockdown off"), ([], "OK last 0"), turnstile]
  }

  @Test("the dashboard: a turnstile's state and its operator actions only where TURNSTILE answers; reader text shown inert")
  func turnstileActions() {
    let turnstile = AdminPages.dashboard(operatorSession, replies: replies(turnstile: (["occupancy 3 <script>x</script>"], "OK turnstile")))
    #expect(turnstile.contains("action=\"/turnstile/forgive\"") && turnstile.contains("action=\"/turnstile/reset\""))
    #expect(turnstile.contains("name=\"csrf\" value=\"c5rf\""))
    #expect(turnstile.contains("occupancy 3 &lt;script&gt;x&lt;/script&gt;") && !turnstile.contains("<script>x"))
    let door = AdminPages.dashboard(operatorSession, replies: replies(turnstile: ([], "ERR 404 no turnstile")))
    #expect(!door.contains("/turnstile/") && !door.contains("id=\"turnstile\""))
    let viewer = AdminSessions.Session(name: "vic", role: .viewer, csrf: "v", created: 0, used: 0)
    let seen = AdminPages.dashboard(viewer, replies: replies(turnstile: (["occupancy 3"], "OK turnstile")))
    #expect(seen.contains("id=\"turnstile\"") && !seen.contains("/turnstile/forgive"), "a viewer sees the state, not the actions")
  }
}

import Glibc
import ScanConsoleLinux
import ScanCore
import ScanPlatform
import Synchronization

/// The web admin page (docs/admin.md, "The web page"): sign-in, the dashboard with decisions
/// live, the door's actions, the people on the allow-list. It holds no door state: every page
/// and action is a console command over the reader's Unix socket, on a connection that names
/// its person first (`AS <name> viewer|operator`), so the reader applies the console's roles,
/// limits and records (`OPEN by web:alice (uid 998)`) and a bug here cannot do more than that
/// person could do on the console. Viewers see state and decisions (never a payload); operators
/// and admins act.
public final class AdminSite: HTTPHandler, @unchecked Sendable {
  public struct Settings: Sendable {
    public var usersFile: String
    public var consolePath: String
    public var idleMinutes: Int
    /// `/metrics`' bearer token (nil: no /metrics).
    public var metricsToken: String?
    /// An issuer's page (never on a reader's host): who signs its guest passes.
    public var issuer: (any GuestPassIssuing)?
    /// A reader on another host, through its TLS console (consolePath "").
    public var remote: RemoteReader?
    public init(
      usersFile: String, consolePath: String, idleMinutes: Int, metricsToken: String? = nil, issuer: (any GuestPassIssuing)? = nil,
      remote: RemoteReader? = nil
    ) {
      self.usersFile = usersFile
      self.consolePath = consolePath
      self.idleMinutes = idleMinutes
      self.metricsToken = metricsToken
      self.issuer = issuer
      self.remote = remote
    }
    /// Whether the page drives a reader (here or on another host).
    var hasReader: Bool { !consolePath.isEmpty || remote != nil }
  }

  /// A reader's TLS console on another host: its address, the TLS context (the reader's CA, this
  /// page's client certificate), and the operator secret each connection AUTHs with (nil: viewer).
  public struct RemoteReader: Sendable {
    public var address: String
    public var context: ConsoleTLSClientContext
    public var secret: String?
    public init(address: String, context: ConsoleTLSClientContext, secret: String?) {
      self.address = address
      self.context = context
      self.secret = secret
    }
  }

  let settings: Settings
  let sessions: AdminSessions
  /// One Argon2id at a time (64 MiB a sign-in, 128 MiB a backup's key): floods queue here, not in memory.
  let hashing = Mutex(())
  private let streams = Mutex<[UInt64: ConsoleClient]>([:])
  private let nextStream = Atomic<UInt64>(1)
  private let wall = SystemWallClock()
  /// Console connections at once, requests and live views together (a request waits up to 5 s
  /// for one): the reader's console keeps the rest of its `console.clients_max` (16) for
  /// technicians and tools, however many browsers come.
  static let consoleMax = 8
  static let streamsMax = 4
  private let consoleSlots = AdminSlots(consoleMax)
  static let cookie = "sg_session"

  /// A hash of a random password: what an unknown name is checked against.
  private let unknownHash: String

  public init(settings: Settings) {
    self.settings = settings
    sessions = AdminSessions(idleMinutes: settings.idleMinutes)
    unknownHash = (try? AdminAccounts.hash(Array(AdminSessions.token().utf8))) ?? ""
  }

  // MARK: - Routing

  public func respond(_ request: HTTPRequest) -> HTTPResponse {
    let now = wall.unixSeconds()
    switch (request.method, request.path) {
    case ("GET", "/app.css"): return HTTPResponse(status: 200, contentType: "text/css; charset=utf-8", body: Array(AdminAssets.css.utf8))
    case ("GET", "/app.js"): return HTTPResponse(status: 200, contentType: "text/javascript; charset=utf-8", body: Array(AdminAssets.script.utf8))
    case ("GET", "/login"): return page("Sign in", body: AdminPages.signIn(message: nil), session: nil)
    case ("GET", "/metrics"): return metrics(request)
    case ("POST", "/login"):
      guard sameOrigin(request) else { return .text(403, "cross-site request refused\n") }
      return signIn(request, now: now)
    default: break
    }
    let token = request.cookie(Self.cookie)
    guard let session = sessions.session(token, now: now) else {
      return request.method == "GET" && request.path != "/events" ? .redirect("/login") : .text(401, "sign in first\n")
    }
    if request.method == "POST" {
      // Every state change: from this site, and with the session's CSRF token.
      guard sameOrigin(request), constantTimeEqual(request.form["csrf"] ?? request.csrf, session.csrf) else {
        return .text(403, "missing or wrong CSRF token, or a cross-site request: refused\n")
      }
    }
    if !settings.hasReader && !["/visitors", "/visitors/issue", "/logout"].contains(request.path) {
      // An issuer's page runs beside no reader: it has visitors only.
      return .redirect("/visitors")
    }
    switch (request.method, request.path) {
    case ("GET", "/"): return dashboard(session)
    case ("GET", "/people"): return people(session, request)
    case ("GET", "/people.csv"): return peopleCSV(session, request)
    case ("GET", "/import"): return importPage(session)
    case ("GET", "/camera"): return cameraPage(session)
    case ("GET", "/camera.png"): return cameraPicture(session)
    case ("POST", "/people/import"): return importPeople(session, request)
    case ("GET", "/people/edit"): return editPage(session, request)
    case ("POST", "/people/edit"): return editPerson(session, request)
    case ("POST", "/people/pin"): return setPin(session, request)
    case ("GET", "/visitors"): return visitorsPage(session)
    case ("POST", "/visitors/issue"): return issueGuestPass(session, request)
    case ("GET", "/backup"): return backupPage(session)
    case ("POST", "/backup/make"): return makeBackup(session, request)
    case ("POST", "/backup/restore"): return restorePeople(session, request)
    case ("GET", "/events"): return events(session)
    case ("GET", "/history"): return history(session, request)
    case ("GET", "/history.csv"): return historyCSV(session, request)
    case ("GET", "/enrol"): return enrolPage(session, fragment: false)
    case ("GET", "/enrol/candidates"): return enrolPage(session, fragment: true)
    case ("POST", "/people/enrol"): return enrolPerson(session, request)
    case ("POST", "/logout"):
      sessions.close(token)
      writeStandardError("scangate admin: \(session.name) signed out\n")
      return .redirect("/login", headers: ["Set-Cookie: \(Self.cookie)=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Strict"])
    case ("POST", "/door/open"): return act(session, "OPEN", back: "/")
    case ("POST", "/lockdown/on"): return act(session, "LOCKDOWN ON", back: "/")
    case ("POST", "/lockdown/off"): return act(session, "LOCKDOWN OFF", back: "/")
    case ("POST", "/turnstile/forgive"): return act(session, "TURNSTILE FORGIVE LAST", back: "/")
    case ("POST", "/turnstile/reset"): return act(session, "TURNSTILE RESET", back: "/")
    case ("POST", "/people/remove"):
      guard let label = request.form["label"], let escaped = AdminPages.consoleLabel(label) else { return .text(400, "bad label\n") }
      return act(session, "REMOVE label=" + escaped, back: "/people")
    default: return .text(404, "not found\n")
    }
  }

  private func sameOrigin(_ request: HTTPRequest) -> Bool {
    !request.host.isEmpty && request.origin == "https://" + request.host
  }

  private func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8), y = Array(b.utf8)
    guard x.count == y.count else { return false }
    var d: UInt8 = 0
    for i in 0..<x.count { d |= x[i] ^ y[i] }
    return d == 0
  }

  // MARK: - Sign-in

  private func signIn(_ request: HTTPRequest, now: Int64) -> HTTPResponse {
    let form = request.form
    let name = form["name"] ?? ""
    var password = Array((form["password"] ?? "").utf8)
    defer { SecretBytes.wipe(&password) }
    let client = request.client
    let wait = sessions.waitBeforeTry(client: client, name: name, now: now)
    guard wait == 0 else {
      writeStandardError("scangate admin: sign-in for \(AdminPages.shown(name)) from \(client) refused: backing off \(wait) s\n")
      return page("Sign in", body: AdminPages.signIn(message: "Too many failed sign-ins: try again in \(wait) s."), session: nil, status: 429)
    }
    let account: AdminAccounts.Account?
    do {
      account = try AdminAccounts.load(settings.usersFile).first { $0.name == name }
    } catch {
      writeStandardError("scangate admin: \(settings.usersFile): \(error): nobody can sign in\n")
      return page("Sign in", body: AdminPages.signIn(message: "The accounts file cannot be read: see the admin service's journal."), session: nil, status: 503)
    }
    // The same work for an unknown name as for a wrong password (no account discovery by timing).
    let good = hashing.withLock { _ in AdminAccounts.verify(password, hash: account?.hash ?? unknownHash) } && account != nil
    guard good, let account else {
      sessions.failed(client: client, name: name, now: now)
      writeStandardError("scangate admin: sign-in failed for \(AdminPages.shown(name)) from \(client)\n")
      return page("Sign in", body: AdminPages.signIn(message: "Wrong name or password."), session: nil, status: 401)
    }
    sessions.succeeded(client: client, name: name)
    let (token, _) = sessions.open(account, now: now)
    writeStandardError("scangate admin: \(account.name) (\(account.role.rawValue)) signed in from \(client)\n")
    return .redirect("/", headers: ["Set-Cookie: \(Self.cookie)=\(token); Path=/; Secure; HttpOnly; SameSite=Strict"])
  }

  // MARK: - The reader, through its console

  /// A console connection that acts for `session`'s person.
  func console(_ session: AdminSessions.Session) -> ConsoleClient? {
    guard consoleSlots.acquire(waitingSeconds: 5) else { return nil }
    let client: ConsoleClient
    do {
      if let remote = settings.remote {
        client = try ConsoleClient(tls: remote.address, context: remote.context)
      } else {
        client = try ConsoleClient(unixPath: settings.consolePath)
      }
    } catch {
      consoleSlots.release()
      if settings.remote != nil { writeStandardError("scangate admin: the reader's console: \(error)\n") }
      return nil
    }
    let slots = consoleSlots
    client.onClose = { slots.release() }
    if let secret = settings.remote?.secret {
      // Another host's connection is an operator by the reader's secret, lowered by AS below.
      guard let auth = client.exchange("AUTH " + secret, timeoutSeconds: 5), auth.status.hasPrefix("OK") else { return nil }
    }
    let role = session.role >= .operator ? "operator" : "viewer"
    guard let named = client.exchange("AS \(session.name) \(role)", timeoutSeconds: 5), named.status.hasPrefix("OK") else { return nil }
    return client
  }

  /// Runs `commands` for `session`; each reply, or nil when the reader cannot be reached.
  func ask(_ session: AdminSessions.Session, _ commands: [String]) -> [(body: [String], status: String)]? {
    guard let client = console(session) else { return nil }
    var replies: [(body: [String], status: String)] = []
    for c in commands {
      // A long import meets the console's line budget (10 a second after 40): the reader drops
      // the line with ERR 429, and it is sent again once the budget has refilled.
      var reply = client.exchange(c, timeoutSeconds: 10)
      for _ in 0..<40 where reply?.status.hasPrefix("ERR 429 too many lines") == true {
        usleep(200_000)
        reply = client.exchange(c, timeoutSeconds: 10)
      }
      guard let reply else { return nil }
      replies.append(reply)
    }
    return replies
  }

  private func act(_ session: AdminSessions.Session, _ command: String, back: String) -> HTTPResponse {
    guard session.role >= .operator else { return .text(403, "an operator's action: this account is a viewer\n") }
    guard let reply = ask(session, [command])?.first else { return .text(503, "the reader's console cannot be reached\n") }
    writeStandardError("scangate admin: \(session.name): \(command.split(separator: " ").prefix(2).joined(separator: " ")): \(reply.status)\n")
    return .redirect(back + "?said=" + AdminPages.urlEscaped(reply.status))
  }

  private func dashboard(_ session: AdminSessions.Session) -> HTTPResponse {
    let replies = ask(session, ["STATUS", "DOOR", "LOCKDOWN", "LAST 10", "TURNSTILE"])
    return page("Door", body: AdminPages.dashboard(session, replies: replies), session: session)
  }

  /// A page of the allow-list, searched and paged on the reader's side (`LIST 50 from= match=`).
  private func people(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .operator else { return page("People", body: AdminPages.viewerOnly(), session: session, status: 403) }
    let arguments = request.arguments
    guard let command = Self.listCommand(arguments, count: 50) else { return .text(400, "q: 1 to 48 bytes; from: an entry number\n") }
    return page("People", body: AdminPages.people(session, reply: ask(session, [command])?.first, search: arguments["q"] ?? ""), session: session)
  }

  /// `LIST count [from=] [match=]` for a page's `from` and `q`; nil when one is malformed.
  static func listCommand(_ arguments: [String: String], count: Int, from: Int? = nil) -> String? {
    var command = "LIST \(count)"
    if let from = from ?? arguments["from"].flatMap({ $0.isEmpty ? nil : Int($0) ?? -1 }) {
      guard from >= 0 && from <= 99_999_999 else { return nil }
      if from > 0 { command += " from=\(from)" }
    }
    if let q = arguments["q"], !q.isEmpty {
      guard let match = AdminPages.consoleLabel(q) else { return nil }
      command += " match=" + match
    }
    return command
  }

  /// Every entry that matches `q`, as CSV: label, tag, flags (never a payload or a digest).
  private func peopleCSV(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .operator else { return .text(403, "an operator's page: this account is a viewer\n") }
    var csv = "label,tag,flags\r\n"
    var from = 0
    var rows = 0
    while true {
      guard let command = Self.listCommand(request.arguments, count: 200, from: from) else { return .text(400, "bad search\n") }
      guard let reply = ask(session, [command])?.first, reply.status.hasPrefix("OK list") else {
        return .text(503, "the reader's console cannot be reached\n")
      }
      for line in reply.body {
        let entry = AdminPages.entry(line)
        csv += [entry.label, entry.tag, entry.flags].map(AdminPages.csvCell).joined(separator: ",") + "\r\n"
        rows += 1
      }
      guard let next = AdminPages.nextFrom(reply.status), next > from else { break }
      from = next
    }
    writeStandardError("scangate admin: \(session.name): people CSV, \(rows) entries\n")
    return HTTPResponse(
      status: 200, contentType: "text/csv; charset=utf-8", headers: ["Content-Disposition: attachment; filename=\"scangate-people.csv\""],
      body: Array(csv.utf8))
  }

  /// Enrol by scanning: the newest unknown codes (their tags and times, never a payload), each
  /// with a label to give it; `fragment`: the table's rows alone (the page refreshes them).
  private func enrolPage(_ session: AdminSessions.Session, fragment: Bool) -> HTTPResponse {
    guard session.role >= .operator else { return page("Enrol", body: AdminPages.viewerOnly(), session: session, status: 403) }
    let reply = ask(session, ["ENROL CANDIDATES"])?.first
    if fragment { return HTTPResponse(status: reply == nil ? 503 : 200, body: Array(AdminPages.candidateRows(session, reply: reply).utf8)) }
    return page("Enrol", body: AdminPages.enrol(session, reply: reply), session: session)
  }

  /// Enrol: the candidate's tag, a label and a schedule, as the console's `ENROL <tag>`.
  private func enrolPerson(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    let form = request.form
    guard let tag = form["tag"], tag.utf8.count == 16, tag.utf8.allSatisfy({ Hex.value(of: $0) != nil }),
      let label = form["label"].flatMap(AdminPages.consoleLabel)
    else { return .text(400, "a candidate's tag (16 hex digits) and a label (1 to 48 bytes)\n") }
    var command = "ENROL \(tag) label=\(label)"
    if let schedule = form["schedule"], !schedule.isEmpty {
      guard schedule.utf8.count <= 32, schedule.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F })
      else { return .text(400, "schedule: 1 to 32 of a-z, 0-9, '-', '_'\n") }
      command += " schedule=" + schedule
    }
    return act(session, command, back: "/enrol")
  }

  func page(_ title: String, body: String, session: AdminSessions.Session?, status: UInt32 = 200) -> HTTPResponse {
    HTTPResponse(status: status, body: Array(AdminPages.layout(title, body: body, session: session, issuer: !settings.hasReader).utf8))
  }

  // MARK: - /metrics

  private func metrics(_ request: HTTPRequest) -> HTTPResponse {
    guard let token = settings.metricsToken else { return .text(404, "not found\n") }
    guard constantTimeEqual(request.authorization, "Bearer " + token) else {
      return HTTPResponse(
        status: 401, contentType: "text/plain; charset=utf-8", headers: ["WWW-Authenticate: Bearer"], body: Array("token required\n".utf8))
    }
    // The numbers as a viewer sees them: no label, tag or payload is in STATS.
    let viewer = AdminSessions.Session(name: "metrics", role: .viewer, csrf: "", created: 0, used: 0)
    guard let stats = ask(viewer, ["STATS"])?.first else { return .text(503, "the reader's console cannot be reached\n") }
    return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(AdminMetrics.text(stats: stats.body).utf8))
  }

  // MARK: - Decisions live (Server-Sent Events fed by WATCH)

  private func events(_ session: AdminSessions.Session) -> HTTPResponse {
    guard let client = console(session), client.exchange("WATCH ON", timeoutSeconds: 5)?.status.hasPrefix("OK") == true else {
      return .text(503, "the reader's console cannot be reached\n")
    }
    let id = nextStream.wrappingAdd(1, ordering: .relaxed).oldValue
    let admitted = streams.withLock { s -> Bool in
      guard s.count < Self.streamsMax else { return false }
      s[id] = client
      return true
    }
    guard admitted else { return .text(503, "too many live views open\n") }
    return HTTPResponse(status: 200, contentType: "text/event-stream", stream: id)
  }

  public func stream(_ id: UInt64, into buffer: UnsafeMutableRawBufferPointer) -> Int {
    guard let client = streams.withLock({ $0[id] }) else { return -1 }
    guard let line = client.nextEvent(waitingMilliseconds: 1000) else { return client.ended ? -1 : 0 }
    let text = Array("data: \(line)\n\n".utf8)
    guard text.count <= buffer.count else { return 0 }
    text.withUnsafeBytes { buffer.copyMemory(from: $0) }
    return text.count
  }

  public func endStream(_ id: UInt64) { _ = streams.withLock { $0.removeValue(forKey: id) } }
}

import ScanCore

/// The admin page's HTML: plain markup of our own, every value from the reader escaped, no
/// inline script or style (the Content-Security-Policy forbids both), a layout that fits a
/// phone at the door as well as a desk.
enum AdminPages {
  /// Text made safe for HTML (element content and quoted attributes).
  static func escaped(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for c in text.unicodeScalars {
      switch c {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&#39;"
      default: out.unicodeScalars.append(c)
      }
    }
    return out
  }

  /// A name as the journal shows it: at most 32 printable ASCII characters, anything else `?`.
  static func shown(_ name: String) -> String {
    String(String.UnicodeScalarView(name.unicodeScalars.prefix(32).map { $0.isASCII && $0.value >= 0x21 && $0.value < 0x7F ? $0 : "?" }))
  }

  /// `text` percent-escaped for a URL's query.
  static func urlEscaped(_ text: String) -> String {
    var out = ""
    for b in text.utf8 {
      if (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2D || b == 0x2E || b == 0x5F {
        out.unicodeScalars.append(UnicodeScalar(b))
      } else {
        out += "%" + String(decoding: [Hex.digit(b >> 4, uppercase: true), Hex.digit(b, uppercase: true)], as: UTF8.self)
      }
    }
    return out
  }

  /// A label as the console's `label=` takes it (letters, digits, `.`, `_`, `-`, `@`, `+`, the
  /// rest as %XX); nil when empty or over 48 bytes.
  static func consoleLabel(_ label: String) -> String? {
    guard (1...48).contains(label.utf8.count) else { return nil }
    var out = ""
    for b in label.utf8 {
      if (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2D || b == 0x2E || b == 0x5F
        || b == 0x40 || b == 0x2B
      {
        out.unicodeScalars.append(UnicodeScalar(b))
      } else {
        out += "%" + String(decoding: [Hex.digit(b >> 4, uppercase: true), Hex.digit(b, uppercase: true)], as: UTF8.self)
      }
    }
    return out
  }

  static func layout(_ title: String, body: String, session: AdminSessions.Session?, issuer: Bool = false) -> String {
    var nav = ""
    if let session, issuer {
      nav = """
        <nav><a href="/visitors">Visitors</a> <span class="who">\(escaped(session.name)) (\(session.role.rawValue))</span>
        <form method="post" action="/logout" class="inline"><input type="hidden" name="csrf" value="\(session.csrf)"><button>Sign out</button></form></nav>
        """
    } else if let session {
      nav = """
        <nav><a href="/">Door</a>\(session.role >= .operator ? " <a href=\"/people\">People</a> <a href=\"/enrol\">Enrol</a> <a href=\"/import\">Import</a> <a href=\"/history\">Events</a> <a href=\"/camera\">Camera</a> <a href=\"/visitors\">Visitors</a>" : "")\(session.role >= .admin ? " <a href=\"/backup\">Backup</a>" : "")
        <span class="who">\(escaped(session.name)) (\(session.role.rawValue))</span>
        <form method="post" action="/logout" class="inline"><input type="hidden" name="csrf" value="\(session.csrf)"><button>Sign out</button></form></nav>
        """
    }
    return """
      <!doctype html>
      <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
      <title>\(escaped(title)) · ScanGate</title><link rel="stylesheet" href="/app.css"><script src="/app.js" defer></script></head>
      <body><header><h1>ScanGate</h1>\(nav)</header><main>\(body)</main></body></html>
      """
  }

  static func signIn(message: String?) -> String {
    """
    <h2>Sign in</h2>\(message.map { "<p class=\"error\" id=\"message\">\(escaped($0))</p>" } ?? "")
    <form method="post" action="/login" class="card">
    <label>Name <input name="name" id="name" autocomplete="username" required autofocus></label>
    <label>Password <input name="password" id="password" type="password" autocomplete="current-password" required></label>
    <button id="sign-in">Sign in</button></form>
    """
  }

  static func viewerOnly() -> String { "<p class=\"error\">This page is for operators and admins.</p>" }

  /// A button that posts to `action` with the session's CSRF token.
  static func button(_ action: String, _ label: String, id: String, session: AdminSessions.Session, danger: Bool = false) -> String {
    """
    <form method="post" action="\(action)" class="inline"><input type="hidden" name="csrf" value="\(session.csrf)"><button id="\(id)"\(danger ? " class=\"danger\"" : "")>\(label)</button></form>
    """
  }

  static func unreachable() -> String {
    "<p class=\"error\" id=\"unreachable\">The reader's console cannot be reached (is scangate running, with console.unix_path, or its TLS console for admin.reader?).</p>"
  }

  static func dashboard(_ session: AdminSessions.Session, replies: [(body: [String], status: String)]?) -> String {
    guard let replies, replies.count == 5 else { return unreachable() }
    // A turnstile reader answers TURNSTILE; a door reader says 404.
    let turnstile = replies[4].status.hasPrefix("OK") ? replies[4] : nil
    var html = "<meta name=\"csrf\" content=\"\(session.csrf)\">"
    if session.role >= .operator {
      html += "<section class=\"card actions\"><h2>Door</h2>"
      html += button("/door/open", "Open door", id: "open", session: session)
      html += button("/lockdown/on", "Lockdown", id: "lockdown-on", session: session, danger: true)
      html += button("/lockdown/off", "Lift lockdown", id: "lockdown-off", session: session)
      if turnstile != nil {
        html += button("/turnstile/forgive", "Forgive the last anti-passback refusal", id: "forgive", session: session)
        html += button("/turnstile/reset", "Reset occupancy to 0", id: "reset-occupancy", session: session, danger: true)
      }
      html += "<p id=\"said\"></p></section>"
    }
    let sections =
      [("Door", "door", replies[1])] + (turnstile.map { [("Turnstile", "turnstile", $0)] } ?? [])
      + [("Fire and lockdown", "emergency", replies[2]), ("Reader", "status", replies[0])]
    for (title, id, reply) in sections {
      html += "<section class=\"card\"><h2>\(title)</h2><ul id=\"\(id)\">"
      let lines = reply.body.isEmpty ? [reply.status] : reply.body
      for line in lines { html += "<li>\(escaped(line))</li>" }
      html += "</ul></section>"
    }
    html += "<section class=\"card\"><h2>Decisions (live)</h2><ul id=\"events\" class=\"events\">"
    for line in replies[3].body.reversed() { html += "<li>\(escaped(line))</li>" }
    html += "</ul></section>"
    return html
  }

  static func people(_ session: AdminSessions.Session, reply: (body: [String], status: String)?, search: String) -> String {
    guard let reply else { return unreachable() }
    let query = search.isEmpty ? "" : "q=" + urlEscaped(search)
    var html = """
      <h2>People</h2><form method="get" action="/people" class="filters"><input id="search" name="q" type="search"
      placeholder="Search labels (Enter: the whole list)" value="\(escaped(search))"><button id="find">Find</button>
      <a id="people-csv" href="/people.csv\(query.isEmpty ? "" : "?" + query)">Download CSV</a></form>
      """
    html += "<p id=\"count\">\(escaped(reply.status))</p><table id=\"people\"><thead><tr><th>Label</th><th>Tag</th><th>Flags</th><th></th></tr></thead><tbody>"
    for line in reply.body {
      let entry = entry(line)
      html += "<tr><td>\(escaped(entry.label))</td><td><code>\(escaped(entry.tag))</code></td><td>\(escaped(entry.flags))</td><td>"
      html += "<a class=\"edit\" href=\"/people/edit?label=\(urlEscaped(entry.label))\">Edit</a> "
      html += "<form method=\"post\" action=\"/people/remove\" class=\"inline confirm\"><input type=\"hidden\" name=\"csrf\" value=\"\(session.csrf)\">"
      html += "<input type=\"hidden\" name=\"label\" value=\"\(escaped(entry.label))\"><button class=\"danger\">Remove</button></form></td></tr>"
    }
    html += "</tbody></table><p>"
    if let next = nextFrom(reply.status) { html += "<a id=\"next\" href=\"/people?\(query.isEmpty ? "" : query + "&")from=\(next)\">Next</a>" }
    return html + "</p>"
  }

  /// A LIST line's label (unescaped for showing), tag and flags.
  static func entry(_ line: String) -> (label: String, tag: String, flags: String) {
    let fields = line.split(separator: " ").map(String.init)
    let tag = fields.first { $0.hasPrefix("tag=") }.map { String($0.dropFirst(4)) } ?? ""
    let flags = fields.dropFirst().filter { !$0.hasPrefix("tag=") }.joined(separator: " ")
    return ((fields.first ?? "").removingPercentEncodingForDisplay, tag, flags)
  }

  /// LIST's `next from=N`, when entries remain.
  static func nextFrom(_ status: String) -> Int? {
    let words = status.split(separator: " ")
    guard let last = words.last, last.hasPrefix("from="), words.dropLast().last == "next" else { return nil }
    return Int(last.dropFirst(5))
  }
}

extension AdminPages {
  static func enrol(_ session: AdminSessions.Session, reply: (body: [String], status: String)?) -> String {
    guard reply != nil else { return unreachable() }
    return """
      <h2>Enrol by scanning</h2>
      <p class="card">Show the badge or code to the reader now: it is refused as unknown and appears below within a
      few seconds, newest first. Compare its time with when it was shown, give it a label, and enrol it.</p>
      <p id="said"></p>
      <p><img id="camera" class="camera" src="/camera.png" alt="The camera's picture (codes blanked)"><br>
      <button id="refresh" class="refresh">Take a new picture</button></p>
      <table><thead><tr><th>Tag</th><th>Seen</th><th>Format</th><th>Enrol as</th></tr></thead>
      <tbody id="candidates">\(candidateRows(session, reply: reply))</tbody></table>
      """
  }

  /// One row per candidate: `<tag> <time> <verdict> <format>` and what refuses it, if anything.
  static func candidateRows(_ session: AdminSessions.Session, reply: (body: [String], status: String)?) -> String {
    guard let reply else { return "<tr><td colspan=\"4\">\(unreachable())</td></tr>" }
    var html = ""
    for line in reply.body {
      let fields = line.split(separator: " ", maxSplits: 4).map(String.init)
      guard fields.count >= 4, fields[0].utf8.count == 16 else { continue }
      let refused = fields.count > 4 ? fields[4] : ""
      html += "<tr><td><code>\(escaped(fields[0]))</code></td><td>\(escaped(fields[1]))</td><td>\(escaped(fields[3]))</td><td>"
      if refused.isEmpty {
        html += "<form method=\"post\" action=\"/people/enrol\" class=\"enrol\"><input type=\"hidden\" name=\"csrf\" value=\"\(session.csrf)\">"
        html += "<input type=\"hidden\" name=\"tag\" value=\"\(escaped(fields[0]))\"><input name=\"label\" placeholder=\"Label\" required maxlength=\"48\">"
        html += "<input name=\"schedule\" placeholder=\"Schedule (optional)\" maxlength=\"32\"><button>Enrol</button></form>"
      } else {
        html += escaped(refused)
      }
      html += "</td></tr>"
    }
    return html.isEmpty ? "<tr><td colspan=\"4\" id=\"none\">No unknown code yet: show one to the reader.</td></tr>" : html
  }
}

extension String {
  /// The console's `%XX` escapes undone for showing (invalid ones kept as written).
  var removingPercentEncodingForDisplay: String {
    var out: [UInt8] = []
    let b = Array(utf8)
    var i = 0
    while i < b.count {
      if b[i] == 0x25, i + 2 < b.count, let hi = Hex.value(of: b[i + 1]), let lo = Hex.value(of: b[i + 2]) {
        out.append(hi << 4 | lo)
        i += 3
      } else {
        out.append(b[i])
        i += 1
      }
    }
    return String(decoding: out, as: UTF8.self)
  }
}

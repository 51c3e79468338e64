import ScanCore
import ScanPlatform

/// Editing one person (docs/admin.md, "The web page"): the fields an admin changes go to the
/// reader as a one-row CSV through `IMPORT APPLY`, with only those columns: the reader keeps
/// every field the CSV does not name (the card number, the PIN, the code), checks the row with
/// the allow-list's own parser, writes it through the durable write and records who.
extension AdminSite {
  func editPage(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .operator else { return page("Edit", body: AdminPages.viewerOnly(), session: session, status: 403) }
    guard let label = request.arguments["label"], AdminPages.consoleLabel(label) != nil else { return .text(400, "a label\n") }
    return page("Edit", body: AdminPages.editForm(session, label: label), session: session)
  }

  func editPerson(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .operator else { return .text(403, "an operator's action: this account is a viewer\n") }
    let form = request.form
    guard let label = form["label"], AdminPages.consoleLabel(label) != nil else { return .text(400, "a label\n") }
    var columns = ["label"], cells = [AdminPages.csvCell(label)]
    for key in ["schedule", "from", "until"] {
      let value = String((form[key] ?? "").drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
      guard !value.isEmpty else { continue }  // as it is
      columns.append(key)
      cells.append(value == "-" ? "" : AdminPages.csvCell(value))
    }
    for key in ["static", "lockdown"] where ["yes", "no"].contains(form[key] ?? "") {
      columns.append(key)
      cells.append(form[key]!)
    }
    guard columns.count > 1 else {
      return page("Edit", body: AdminPages.editForm(session, label: label, said: "Nothing to change."), session: session, status: 400)
    }
    let csv = columns.joined(separator: ",") + "\r\n" + cells.joined(separator: ",") + "\r\n"
    guard let replies = ask(session, ["IMPORT BEGIN"] + Self.importData(Array(csv.utf8)) + ["IMPORT APPLY"]), let last = replies.last else {
      return page("Edit", body: AdminPages.unreachable(), session: session, status: 503)
    }
    let reply = replies.first { $0.status.hasPrefix("ERR") } ?? last
    writeStandardError("scangate admin: \(session.name): edit \(AdminPages.shown(label)): \(reply.status)\n")
    return page(
      "Edit", body: AdminPages.editForm(session, label: label, said: reply.status), session: session, status: reply.status.hasPrefix("OK") ? 200 : 409)
  }
}

extension AdminSite {
  /// A person's PIN (asked on the keypad after the pass): set or taken off by the reader's `PIN`,
  /// which makes the `pin=` under the keypad's key. The PIN is in no log here or there.
  func setPin(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .operator else { return .text(403, "an operator's action: this account is a viewer\n") }
    let form = request.form
    guard let label = form["label"], let escapedLabel = AdminPages.consoleLabel(label) else { return .text(400, "a label\n") }
    let clear = form["action"] == "clear"
    let pin = form["pin"] ?? ""
    guard clear || ((4...12).contains(pin.utf8.count) && pin.utf8.allSatisfy { (0x30...0x39).contains($0) }) else {
      return page("Edit", body: AdminPages.editForm(session, label: label, said: "A PIN is 4 to 12 digits."), session: session, status: 400)
    }
    guard let reply = ask(session, ["PIN label=\(escapedLabel) \(clear ? "CLEAR" : pin)"])?.first else {
      return page("Edit", body: AdminPages.unreachable(), session: session, status: 503)
    }
    writeStandardError("scangate admin: \(session.name): pin \(clear ? "clear" : "set") \(AdminPages.shown(label)): \(reply.status)\n")
    let ok = reply.status.hasPrefix("OK")
    return page("Edit", body: AdminPages.editForm(session, label: label, said: reply.status), session: session, status: ok ? 200 : 409)
  }
}

extension AdminPages {
  static func editForm(_ session: AdminSessions.Session, label: String, said: String? = nil) -> String {
    func choice(_ key: String, _ text: String) -> String {
      """
      <label>\(text) <select name="\(key)" id="edit-\(key)"><option value="">as it is</option><option value="yes">yes</option>\
      <option value="no">no</option></select></label>
      """
    }
    return """
      <h2>Edit \(escaped(label))</h2>
      \(said.map { "<p id=\"said\" class=\"\($0.hasPrefix("OK") ? "" : "error")\">\(escaped($0))</p>" } ?? "")
      <p class="card">Only what you fill in changes; the code, the card number and the PIN stay as they are. Type
      <code>-</code> to clear a field. Times in RFC 3339 (2026-12-24T18:00:00Z).</p>
      <form method="post" action="/people/edit" class="card" id="edit">
      <input type="hidden" name="csrf" value="\(session.csrf)"><input type="hidden" name="label" value="\(escaped(label))">
      <label>Schedule <input name="schedule" id="edit-schedule" placeholder="as it is"></label>
      <label>Valid from <input name="from" id="edit-from" placeholder="as it is"></label>
      <label>Valid until <input name="until" id="edit-until" placeholder="as it is"></label>
      \(choice("static", "Opens while the fleet is offline (deny-all-but-static)"))
      \(choice("lockdown", "Lets in during a lockdown"))
      <button id="save">Save</button></form>
      <form method="post" action="/people/pin" class="card" id="pin">
      <input type="hidden" name="csrf" value="\(session.csrf)"><input type="hidden" name="label" value="\(escaped(label))">
      <label>PIN, asked on the keypad after the pass <input type="password" name="pin" id="pin-digits" inputmode="numeric"
      autocomplete="off" minlength="4" maxlength="12"></label>
      <button id="set-pin" name="action" value="set">Set PIN</button> <button id="clear-pin" name="action" value="clear">Take the PIN off</button>
      </form>
      <p><a href="/people?q=\(urlEscaped(label))">Back to people</a></p>
      """
  }
}

import ScanConsoleLinux
import ScanCore
import ScanPlatform
import Synchronization

/// Backup and restore on the page (docs/backup.md, "From the web page"), for admins. A backup:
/// the page makes an X25519 key pair from the passphrase (Argon2id, here, never on the reader's
/// loop), sends only the public key to the reader's `BACKUP`, and hands the sealed archive it gets
/// back to the browser: the reader never sees the passphrase, this process never sees the files.
/// A restore of the people: the page opens the archive with the passphrase, and its allow-list
/// goes to the reader's `IMPORT CHECK LIST` (Preview, nothing written) and `IMPORT APPLY LIST`.
/// The configuration, schedules, state and secrets are restored on the reader, as root, by
/// `scangate backup restore`: the reader's service cannot write them, and this page must not.
extension AdminSite {
  /// Archive bytes the page takes (base64 in a form under the 64 KiB request limit).
  static let archiveBytesMax = 45_000

  func backupPage(_ session: AdminSessions.Session) -> HTTPResponse {
    guard session.role >= .admin else { return page("Backup", body: AdminPages.adminOnly(), session: session, status: 403) }
    return page("Backup", body: AdminPages.backupForms(session), session: session)
  }

  func makeBackup(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .admin else { return .text(403, "an admin's action\n") }
    let form = request.form
    var pass = Array((form["passphrase"] ?? "").utf8)
    defer { SecretBytes.wipe(&pass) }
    guard pass == Array((form["again"] ?? "").utf8) else {
      return page("Backup", body: AdminPages.backupForms(session, said: "The two passphrases differ."), session: session, status: 400)
    }
    let derivation = BackupArchive.Derivation.fresh()
    let key: [UInt8]
    do throws(BackupArchive.Refusal) {
      var pair = try hashing.withLock { _ throws(BackupArchive.Refusal) in try BackupArchive.keyPair(passphrase: pass, derivation) }
      SecretBytes.wipe(&pair.secret)
      key = pair.public
    } catch {
      return page("Backup", body: AdminPages.backupForms(session, said: "No backup: \(error)."), session: session, status: 400)
    }
    let command = "BACKUP \(BackupArchive.hex(key)) \(BackupArchive.hex(derivation.salt)) \(derivation.ops) \(derivation.mem / 1_024)"
    guard let reply = ask(session, [command])?.first else { return page("Backup", body: AdminPages.unreachable(), session: session, status: 503) }
    writeStandardError("scangate admin: \(session.name): backup: \(reply.status.prefix(80))\n")
    guard reply.status.hasPrefix("OK"), let sealed = ConsoleClient.decodeBase64(reply.body.joined()),
      let head = try? BackupArchive.header(sealed)
    else {
      return page("Backup", body: AdminPages.backupForms(session, said: reply.status), session: session, status: 502)
    }
    let day = RFC3339.format(head.created).prefix(10)
    return HTTPResponse(
      status: 200, contentType: "application/octet-stream",
      headers: ["Content-Disposition: attachment; filename=\"scangate-\(head.reader)-\(day).sgbackup\""], body: sealed)
  }

  func restorePeople(_ session: AdminSessions.Session, _ request: HTTPRequest) -> HTTPResponse {
    guard session.role >= .admin else { return .text(403, "an admin's action\n") }
    let form = request.form
    let apply = form["action"] == "apply"
    let text = form["archive"] ?? ""
    func refuse(_ why: String, _ status: UInt32 = 400) -> HTTPResponse {
      page("Backup", body: AdminPages.backupForms(session, said: why), session: session, status: status)
    }
    guard let archive = ConsoleClient.decodeBase64(text), !archive.isEmpty, archive.count <= Self.archiveBytesMax else {
      return refuse("Choose a backup file of at most \(Self.archiveBytesMax / 1_000) kB (a larger one: scangate backup restore on the reader).")
    }
    var pass = Array((form["passphrase"] ?? "").utf8)
    defer { SecretBytes.wipe(&pass) }
    let opened: BackupArchive
    do throws(BackupArchive.Refusal) {
      opened = try hashing.withLock { _ throws(BackupArchive.Refusal) in try BackupArchive.open(archive, passphrase: pass) }
    } catch {
      writeStandardError("scangate admin: \(session.name): restore refused: \(error)\n")
      return refuse("Not restored: \(error).", 409)
    }
    guard let list = opened.files.first(where: { $0.role == "allow_list.path" }) else { return refuse("This backup holds no allow-list.", 409) }
    var commands = ["IMPORT BEGIN"] + Self.importData(list.bytes)
    commands.append(apply ? "IMPORT APPLY LIST" : "IMPORT CHECK LIST")
    guard let replies = ask(session, commands), let last = replies.last else {
      return page("Backup", body: AdminPages.unreachable(), session: session, status: 503)
    }
    let reply = replies.first { $0.status.hasPrefix("ERR") } ?? last
    writeStandardError("scangate admin: \(session.name): restore people \(apply ? "apply" : "check"): \(reply.status)\n")
    let body = AdminPages.restoreResult(session, archive: text, opened: opened, reply: reply, applied: apply)
    return page("Backup", body: body, session: session, status: reply.status.hasPrefix("OK") ? 200 : 409)
  }
}

extension AdminPages {
  static func adminOnly() -> String { "<p class=\"card\">Backup and restore are for admins.</p>" }

  static func backupForms(_ session: AdminSessions.Session, said: String? = nil) -> String {
    """
    <h2>Backup</h2>
    \(said.map { "<p class=\"error\" id=\"said\">\(escaped($0))</p>" } ?? "")
    <p class="card">One file: the configuration, the allow-list, schedules, trust and revocation files and the state
    that protects decisions, sealed under a passphrase of at least 12 characters. Keep the passphrase apart: without it
    the file opens for nobody. Never a key or password file: <code>sudo scangate backup create</code> on the reader
    includes those (docs/backup.md).</p>
    <form method="post" action="/backup/make" class="card" id="make">
    <input type="hidden" name="csrf" value="\(session.csrf)">
    <label>Passphrase <input type="password" name="passphrase" id="backup-passphrase" minlength="12" autocomplete="new-password"></label>
    <label>Again <input type="password" name="again" id="backup-again" minlength="12" autocomplete="new-password"></label>
    <button id="download">Download a backup</button></form>
    <h2>Restore the people from a backup</h2>
    <p class="card">The backup's allow-list replaces the reader's: Preview shows who would be added, changed and
    removed, and writes nothing. The configuration, schedules, state and secrets are restored on the reader:
    <code>sudo scangate backup restore FILE</code>.</p>
    \(restoreForm(session, archive: "", action: "check", button: "Preview"))
    """
  }

  static func restoreForm(_ session: AdminSessions.Session, archive: String, action: String, button: String) -> String {
    let file =
      archive.isEmpty
      ? "<label>Backup file <input type=\"file\" id=\"archive-file\" accept=\".sgbackup\"></label>"
      : "<p>The same backup file.</p>"
    return """
      <form method="post" action="/backup/restore" class="card" id="restore-\(action)">
      <input type="hidden" name="csrf" value="\(session.csrf)"><input type="hidden" name="action" value="\(action)">
      <input type="hidden" name="archive" id="archive" value="\(escaped(archive))">\(file)
      <label>Its passphrase <input type="password" name="passphrase" id="restore-passphrase-\(action)" autocomplete="off"></label>
      <button id="restore-\(action)-button">\(button)</button></form>
      """
  }

  static func restoreResult(
    _ session: AdminSessions.Session, archive: String, opened: BackupArchive, reply: (body: [String], status: String), applied: Bool
  ) -> String {
    let ok = reply.status.hasPrefix("OK")
    var html = "<h2>Restore the people from a backup</h2>"
    html += "<p class=\"card\" id=\"backup-about\">From \(escaped(opened.reader)), made \(RFC3339.format(opened.created)), "
    html += "\(opened.files.count) files.</p><p id=\"summary\" class=\"\(ok ? "" : "error")\">\(escaped(reply.status))</p><ul id=\"changes\">"
    for line in reply.body { html += "<li>\(escaped(line.removingPercentEncodingForDisplay))</li>" }
    html += "</ul>"
    if ok && !applied && !reply.body.isEmpty {
      html += "<p>Type the passphrase again to apply.</p>" + restoreForm(session, archive: archive, action: "apply", button: "Restore these people")
    }
    return html + "<p><a href=\"/backup\">Backup</a> · <a href=\"/people\">People</a></p>"
  }
}

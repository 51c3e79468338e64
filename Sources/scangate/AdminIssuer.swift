import Glibc
import ScanCore
import ScanLinux
import ScanTools

/// The issuer's page's signer (`admin.issuer_key_file`): a guest pass made by the same rules as
/// `scangate credential issue --guest` (its options checked by the same code), its sheet drawn by
/// the same PassSheet. The key is read from its secret file for each pass and wiped after: the
/// page holds no key between passes, and a key replaced on disk is the next pass's.
struct GuestPassIssuer: GuestPassIssuing {
  let keyPath: String
  let kid: String

  /// Checks the key file and the kid as a trust file would name it, once at startup.
  init(keyPath: String, kid: String) throws(ParseError) {
    self.keyPath = keyPath
    self.kid = kid
    do {
      _ = try CredentialFiles.parseTrust(Array("[issuer.\(kid)]\ned25519 = \"\(String(repeating: "00", count: 32))\"\n".utf8))
    } catch { throw ParseError(message: "admin.issuer_kid '\(kid)': not an issuer name a trust file can hold (\(error))") }
    do {
      var seed = try CredentialFiles.readSecretKey(keyPath)
      SecretBytes.wipe(&seed)
    } catch { throw ParseError(message: "admin.issuer_key_file: \(error)") }
  }

  func issue(_ request: GuestPassRequest) throws -> GuestPassSheets {
    var arguments = ["--guest", request.name, "--uses", String(request.uses), "--valid", "\(request.validSeconds)s"]
    if request.firstUseWindowSeconds > 0 { arguments += ["--first-use-window", "\(request.firstUseWindowSeconds)s"] }
    let o = try Options(arguments, valued: ["guest", "uses", "valid", "first-use-window"], known: [])
    var claims = PassClaims(subject: "guest", expires: 0, id: [])
    try CredentialCommand.setValidity(&claims, o, now: Int64(Glibc.time(nil)))
    try CredentialCommand.setKind(&claims, o)
    var seed = try CredentialFiles.readSecretKey(keyPath)
    defer { SecretBytes.wipe(&seed) }
    let pass = try CredentialIssuer.issue(claims, kid: Array(kid.utf8), issuerSeed: seed)
    let sheet = CredentialCommand.passSheet(text: pass.staticText, claims: claims, guest: request.name)
    return GuestPassSheets(
      id: Hex.string(claims.id), summary: CredentialCommand.sheetLines(claims).joined(separator: "; "),
      png: try sheet.render(path: "sheet.png"), pdf: try sheet.render(path: "sheet.pdf"))
  }
}

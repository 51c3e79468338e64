import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate credential`: the issuer's tools for signed passes (docs/credentials.md).
enum CredentialCommand {
  static func run(_ arguments: [String]) -> Int32 {
    var arguments = arguments
    guard let sub = arguments.first else {
      writeStandardError("scangate credential: keygen | issue | show | revoke (see scangate help credential)\n")
      return 2
    }
    arguments.removeFirst()
    do {
      switch sub {
      case "keygen": return try keygen(arguments)
      case "issue": return try issue(arguments)
      case "show": return try show(arguments)
      case "revoke": return try revoke(arguments)
      default: throw ParseError(message: "unknown subcommand '\(sub)' (keygen, issue, show, revoke)")
      }
    } catch let error as ParseError {
      writeStandardError("scangate credential \(sub): \(error.message)\n")
      return 2
    } catch {
      writeStandardError("scangate credential \(sub): \(error)\n")
      return 1
    }
  }

  /// keygen --issuer FILE [--kid KID] | --site FILE: a new key in a secret file (mode 0600,
  /// never overwritten); prints the public half (for the trust file, or for issuing).
  static func keygen(_ arguments: [String]) throws -> Int32 {
    let o = try Options(arguments, valued: ["issuer", "site", "kid"], known: [])
    var secret = CredentialIssuer.randomBytes(32)
    defer { SecretBytes.wipe(&secret) }
    if let path = o.value("issuer") {
      let kid = o.value("kid") ?? "issuer-1"
      _ = try CredentialFiles.parseTrust(Array("[issuer.\(kid)]\ned25519 = \"\(String(repeating: "00", count: 32))\"\n".utf8))
      try SecretFile.create(path, Array(Hex.string(secret).utf8) + [0x0A])
      let pk = CredentialIssuer.issuerPublicKey(secret)!
      print("# issuer key written to \(path) (keep it off the readers)")
      print("# add to each reader's trust file:")
      print("[issuer.\(kid)]")
      print("ed25519 = \"\(Hex.string(pk))\"")
      print("not_before = \"\(RFC3339.format(Int64(Glibc.time(nil))))\"")
      return 0
    }
    guard let path = o.value("site") else { throw ParseError(message: "--issuer FILE or --site FILE") }
    try SecretFile.create(path, Array(Hex.string(secret).utf8) + [0x0A])
    print("# site key written to \(path): copy it to every reader ([credentials] site_key_file, mode 0600)")
    print("site_public = \"\(Hex.string(CredentialIssuer.sitePublicKey(secret)!))\"  # for issuing rotating passes")
    return 0
  }

  /// issue --key FILE --kid KID --sub HOLDER | --guest NAME [claims and outputs]: a signed pass,
  /// printed as its text (or --json), and written as a QR code (--png) or pass sheets (--sheet).
  static func issue(_ arguments: [String]) throws -> Int32 {
    let o = try Options(
      arguments,
      valued: [
        "key", "kid", "sub", "label", "zones", "valid", "nbf", "exp", "id", "digits", "site-public", "card", "png", "sheet", "at", "guest",
        "uses", "zone",
        "first-use-window",
      ],
      known: ["single-use", "lockdown", "rotating", "wallet", "json", "pin"])
    let guest = o.value("guest")
    guard let keyPath = o.value("key"), let kid = o.value("kid"), let sub = o.value("sub") ?? guest.map({ _ in "guest" }) else {
      throw ParseError(message: "--key FILE --kid KID and --sub HOLDER (or --guest NAME) are required")
    }
    // The sheet's times in the site's zone (schedule.time_zone's names), else this host's.
    if let zone = o.value("zone"), zone.isEmpty || !SystemLocalCalendar.useTimeZone(zone) {
      throw ParseError(message: "--zone \(zone): not a time zone in tzdata (e.g. Europe/Berlin)")
    }
    let now = try o.value("at").map(time) ?? Int64(Glibc.time(nil))
    var claims = PassClaims(subject: sub, expires: 0, id: [])
    defer { if claims.pin != nil { SecretBytes.wipe(&claims.pin!) } }
    try setValidity(&claims, o, now: now)
    try setKind(&claims, o)
    if o.flag("pin") { claims.pin = try readPin() }
    var seed = try CredentialFiles.readSecretKey(keyPath)
    defer { SecretBytes.wipe(&seed) }
    let pass = try CredentialIssuer.issue(claims, kid: Array(kid.utf8), issuerSeed: seed)
    let shown = pass.digits == 0 ? pass.staticText : pass.presented(totp: totpNow(pass, at: now))
    if let png = o.value("png") { try writeQRCode(shown, to: png) }
    try writePassSheets(o.value("sheet"), text: shown, claims: claims, rotating: pass.digits > 0, guest: o.value("guest"))
    printIssued(pass, shown: shown, claims: claims, json: o.flag("json"))
    if o.flag("wallet") { printWalletObject(pass, shown: shown, claims: claims, holder: sub, now: now) }
    return 0
  }

  /// The pass's times, label and limits from --nbf, --exp or --valid, --label or --guest, --uses
  /// and --first-use-window (a guest pass must limit itself).
  static func setValidity(_ claims: inout PassClaims, _ o: Options, now: Int64) throws {
    let guest = o.value("guest")
    claims.issuedAt = now
    claims.notBefore = try o.value("nbf").map(time)
    if let exp = o.value("exp") {
      claims.expires = try time(exp)
    } else {
      claims.expires = (claims.notBefore ?? now) + (try duration(o.value("valid") ?? "1d"))
    }
    claims.label = o.value("label") ?? guest ?? ""
    if let guest {
      // A guest pass limits itself: it needs a number of uses or a first-use window (or both).
      guard !guest.isEmpty, o.value("label") == nil else { throw ParseError(message: "--guest NAME is the pass's label: give one, not --label too") }
      guard o.value("uses") != nil || o.value("first-use-window") != nil else {
        throw ParseError(message: "a guest pass needs --uses N or --first-use-window DURATION (or both)")
      }
    }
    claims.uses = try o.integer("uses", default: 0, range: 1...CredentialClaims.usesMax)
    if let window = o.value("first-use-window") {
      claims.firstUseWindow = try duration(window)
      guard claims.firstUseWindow <= claims.expires - (claims.notBefore ?? now) else {
        throw ParseError(message: "--first-use-window is longer than the pass's validity (--valid or --exp)")
      }
    }
  }

  /// The pass's zones, flags, id and card, and the site key a rotating pass or a PIN needs.
  static func setKind(_ claims: inout PassClaims, _ o: Options) throws {
    claims.zones = o.value("zones").map { $0.split(separator: ",").map(String.init) } ?? []
    claims.singleUse = o.flag("single-use")
    claims.lockdown = o.flag("lockdown")
    claims.id = try o.value("id").map { try hex($0, "--id") } ?? CredentialIssuer.randomBytes(8)
    if let card = o.value("card") {
      let p = card.split(separator: ":")
      guard p.count == 2, let f = UInt32(p[0]), let n = UInt64(p[1]) else { throw ParseError(message: "--card FACILITY:NUMBER") }
      claims.card = (f, n)
    }
    if o.flag("rotating") || o.flag("pin") {
      guard let site = o.value("site-public") else {
        throw ParseError(message: "a \(o.flag("rotating") ? "rotating pass" : "pass with a PIN") needs --site-public HEX")
      }
      claims.sitePublicKey = try hex(site, "--site-public")
    }
    if o.flag("rotating") { claims.rotatingDigits = try o.integer("digits", default: 6, range: 6...8) }
  }

  /// The PIN from standard input, as `allow-list pin` reads it; only its sealed verifier is written.
  static func readPin() throws -> [UInt8] {
    var pin = Array((readLine(strippingNewline: true) ?? "").utf8)
    defer { SecretBytes.wipe(&pin) }
    guard (PinEntry.digitsMin...PinEntry.digitsMax).contains(pin.count), pin.allSatisfy({ (0x30...0x39).contains($0) }) else {
      throw ParseError(message: "the PIN (standard input) must be \(PinEntry.digitsMin) to \(PinEntry.digitsMax) digits")
    }
    return pin
  }

  /// The pass as a PNG QR code: a static pass as it is; a rotating one as it shows now (its
  /// holder's wallet shows the rest).
  static func writeQRCode(_ shown: String, to png: String) throws {
    guard let qr = renderQRCode(text: shown, scale: 4) else { throw ParseError(message: "the pass does not fit a QR code") }
    guard writePNG(path: png, pixels: qr.image.pixels, width: qr.image.width, height: qr.image.height, components: 1) else {
      throw ParseError(message: "\(png): cannot write")
    }
    writeStandardError("scangate credential issue: \(png): QR version \((qr.modules - 17) / 4), \(qr.modules)×\(qr.modules) modules\n")
  }

  /// Prints the pass's text, or with --json its id, text and (rotating) TOTP body, seed and pattern.
  static func printIssued(_ pass: IssuedPass, shown: String, claims: PassClaims, json: Bool) {
    guard json else {
      print(shown)
      return
    }
    var j = "{\"id\":\(jsonString(Hex.string(claims.id))),\"text\":\(jsonString(shown))"
    if pass.digits > 0 {
      j += ",\"body\":\(jsonString(pass.body)),\"digits\":\(pass.digits),\"seed_hex\":\(jsonString(Hex.string(pass.seed)))"
      j += ",\"pattern\":\(jsonString(pass.walletPattern))"
    }
    print(j + "}")
  }

  /// Prints the pass's Google Wallet fields (--wallet), for a rotating or a static pass.
  static func printWalletObject(_ pass: IssuedPass, shown: String, claims: PassClaims, holder sub: String, now: Int64) {
    if pass.digits > 0 {
      // Google Wallet's rotatingBarcode (the pass object's field): the wallet computes the TOTP
      // value from the key and puts it in the pattern. The key is the holder's secret.
      print(
        """
        {"rotatingBarcode": {"type": "QR_CODE", "renderEncoding": "UTF_8", "valuePattern": \(jsonString(pass.walletPattern)),
          "totpDetails": {"periodMillis": "30000", "algorithm": "TOTP_SHA1",
            "parameters": [{"key": \(jsonString(Hex.string(pass.seed))), "valueLength": \(pass.digits)}]},
          "alternateText": \(jsonString(claims.label.isEmpty ? sub : claims.label))}}
        """)
    } else if pass.digits == 0 {
      // A static pass (a guest's) as a Google Wallet GenericObject's own fields: the code as its
      // barcode, who it is for, and when it is valid. The site adds `id` and `classId` (its
      // Google issuer account) and signs the Save to Google Wallet link; ScanGate holds no Google key.
      let name = jsonString(claims.label.isEmpty ? sub : claims.label)
      print(
        """
        {"cardTitle": {"defaultValue": {"language": "en", "value": "Access pass"}},
          "header": {"defaultValue": {"language": "en", "value": \(name)}},
          "barcode": {"type": "QR_CODE", "value": \(jsonString(shown)), "alternateText": \(name)},
          "validTimeInterval": {"start": {"date": \(jsonString(RFC3339.format(claims.notBefore ?? now)))},
            "end": {"date": \(jsonString(RFC3339.format(claims.expires)))}}}
        """)
    }
  }

  /// revoke --key FILE --kid KID --version N --out FILE [--from FILE --trust FILE] ID...: a signed
  /// revocation list with the ids given (and those of the list in --from, after verifying it).
  static func revoke(_ arguments: [String]) throws -> Int32 {
    let o = try Options(arguments, valued: ["key", "kid", "version", "out", "from", "trust"], known: [])
    guard let keyPath = o.value("key"), let kid = o.value("kid"), let out = o.value("out") else {
      throw ParseError(message: "--key FILE --kid KID --out FILE are required")
    }
    var ids = try o.positionals.map { try hex($0, "id") }
    let now = Int64(Glibc.time(nil))
    var version = UInt64(try o.integer("version", default: 1, range: 1...Int.max))
    if let from = o.value("from") {
      guard let trust = o.value("trust") else { throw ParseError(message: "--from needs --trust FILE to verify it") }
      let sign1 = Sign1Verifier(trust: try CredentialFiles.readTrust(trust), codec: LibCBOR(), crypto: SodiumCredentialCrypto(siteSecretKey: nil))
      let bytes = try readWholeFile(from, maxBytes: CredentialFiles.revocationBytesMax)
      let old = try bytes.withUnsafeBytes { b throws(ParseError) in try CredentialFiles.parseRevocation(b, sign1: sign1, now: now, current: 0) }
      ids = old.ids.map(\.bytes) + ids
      if o.value("version") == nil {
        guard old.version < .max else { throw ParseError(message: "the old list's version is the largest there is") }
        version = old.version + 1
      }
      guard version > old.version else { throw ParseError(message: "--version must be above the old list's \(old.version)") }
    }
    var seed = try CredentialFiles.readSecretKey(keyPath)
    defer { SecretBytes.wipe(&seed) }
    let list = try CredentialIssuer.revocationList(version: version, issuedAt: now, ids: ids, kid: Array(kid.utf8), issuerSeed: seed)
    try writeFileAtomically(out, list)
    print("revocation list v\(version): \(ids.count) id(s) written to \(out)")
    return 0
  }

  static func totpNow(_ pass: IssuedPass, at now: Int64) -> UInt32 {
    let crypto = SodiumCredentialCrypto(siteSecretKey: nil)
    return pass.seed.withUnsafeBytes { TOTP.value(key: $0, step: now / CredentialSettings.periodSeconds, digits: pass.digits, crypto: crypto) }
  }

  /// RFC 3339, or Unix seconds.
  static func time(_ text: String) throws(ParseError) -> Int64 {
    if let n = Int64(text) { return n }
    return try RFC3339.parse(text[...])
  }

  /// 90s, 15m, 8h, 30d.
  static func duration(_ text: String) throws(ParseError) -> Int64 {
    // At most 100 years: a longer pass is a mistake, and no sum with it may trap.
    guard let unit = text.last, let n = Int64(text.dropLast()), n > 0, n <= 3_155_760_000 else {
      throw ParseError(message: "--valid N[s|m|h|d] (up to 100 years), got '\(text)'")
    }
    let seconds: Int64
    switch unit {
    case "s": seconds = n
    case "m": seconds = n * 60
    case "h": seconds = n * 3600
    case "d": seconds = n * 86_400
    default: throw ParseError(message: "--valid N[s|m|h|d], got '\(text)'")
    }
    guard seconds <= 3_155_760_000 else { throw ParseError(message: "--valid N[s|m|h|d] (up to 100 years), got '\(text)'") }
    return seconds
  }

  static func hex(_ text: String, _ what: String) throws(ParseError) -> [UInt8] {
    let t = Array(text.utf8)
    guard t.count % 2 == 0, t.count > 0 else { throw ParseError(message: "\(what): hex digits expected") }
    var out = [UInt8](repeating: 0, count: t.count / 2)
    let n = t.withUnsafeBytes { s in out.withUnsafeMutableBytes { (try? Hex.decode(s, into: $0)) ?? -1 } }
    guard n == out.count else { throw ParseError(message: "\(what): hex digits expected") }
    return out
  }
}

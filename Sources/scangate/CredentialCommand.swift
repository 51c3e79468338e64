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

  static func issue(_ arguments: [String]) throws -> Int32 {
    let o = try Options(
      arguments,
      valued: [
        "key", "kid", "sub", "label", "zones", "valid", "nbf", "exp", "id", "digits", "site-public", "card", "png", "sheet", "at", "guest",
        "uses",
        "first-use-window",
      ],
      known: ["single-use", "lockdown", "rotating", "wallet", "json", "pin"])
    let guest = o.value("guest")
    guard let keyPath = o.value("key"), let kid = o.value("kid"), let sub = o.value("sub") ?? guest.map({ _ in "guest" }) else {
      throw ParseError(message: "--key FILE --kid KID and --sub HOLDER (or --guest NAME) are required")
    }
    let now = try o.value("at").map(time) ?? Int64(Glibc.time(nil))
    var claims = PassClaims(subject: sub, expires: 0, id: [])
    defer { if claims.pin != nil { SecretBytes.wipe(&claims.pin!) } }
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
    if o.flag("pin") {
      // The PIN from standard input, as `allow-list pin` reads it; only its sealed verifier is written.
      var pin = Array((readLine(strippingNewline: true) ?? "").utf8)
      defer { SecretBytes.wipe(&pin) }
      guard (PinEntry.digitsMin...PinEntry.digitsMax).contains(pin.count), pin.allSatisfy({ (0x30...0x39).contains($0) }) else {
        throw ParseError(message: "the PIN (standard input) must be \(PinEntry.digitsMin) to \(PinEntry.digitsMax) digits")
      }
      claims.pin = pin
    }
    var seed = try CredentialFiles.readSecretKey(keyPath)
    defer { SecretBytes.wipe(&seed) }
    let pass = try CredentialIssuer.issue(claims, kid: Array(kid.utf8), issuerSeed: seed)
    let shown = pass.digits == 0 ? pass.staticText : pass.presented(totp: totpNow(pass, at: now))
    if let png = o.value("png") {
      // A static pass as it is; a rotating one as it shows now (its holder's wallet shows the rest).
      guard let qr = renderQRCode(text: shown, scale: 4) else { throw ParseError(message: "the pass does not fit a QR code") }
      guard writePNG(path: png, pixels: qr.image.pixels, width: qr.image.width, height: qr.image.height, components: 1) else {
        throw ParseError(message: "\(png): cannot write")
      }
      writeStandardError("scangate credential issue: \(png): QR version \((qr.modules - 17) / 4), \(qr.modules)×\(qr.modules) modules\n")
    }
    try writePassSheets(o.value("sheet"), text: shown, claims: claims, rotating: pass.digits > 0, guest: o.value("guest"))
    if o.flag("json") {
      var j = "{\"id\":\(jsonString(Hex.string(claims.id))),\"text\":\(jsonString(shown))"
      if pass.digits > 0 {
        j += ",\"body\":\(jsonString(pass.body)),\"digits\":\(pass.digits),\"seed_hex\":\(jsonString(Hex.string(pass.seed)))"
        j += ",\"pattern\":\(jsonString(pass.walletPattern))"
      }
      print(j + "}")
    } else {
      print(shown)
    }
    if o.flag("wallet") && pass.digits > 0 {
      // Google Wallet's rotatingBarcode (the pass object's field): the wallet computes the TOTP
      // value from the key and puts it in the pattern. The key is the holder's secret.
      print(
        """
        {"rotatingBarcode": {"type": "QR_CODE", "renderEncoding": "UTF_8", "valuePattern": \(jsonString(pass.walletPattern)),
          "totpDetails": {"periodMillis": "30000", "algorithm": "TOTP_SHA1",
            "parameters": [{"key": \(jsonString(Hex.string(pass.seed))), "valueLength": \(pass.digits)}]},
          "alternateText": \(jsonString(claims.label.isEmpty ? sub : claims.label))}}
        """)
    }
    if o.flag("wallet") && pass.digits == 0 {
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
    return 0
  }

  /// show [--config FILE | --trust FILE [--site-key FILE] [--zones A,B]] [--at TIME] [--json] TEXT|-:
  /// decodes and verifies like a reader would (nothing is recorded); exit 0 when it would open.
  static func show(_ arguments: [String]) throws -> Int32 {
    let o = try Options(
      arguments, valued: ["config", "trust", "site-key", "revocation", "at", "zones", "time-policy", "repeat"], known: ["json"])
    var settings = CredentialSettings()
    var usedPath: String? = nil
    if o.value("trust") == nil {
      guard let config = loadConfig(o) else { return 1 }
      settings = config.credentials
      usedPath = settings.usedFile ?? config.statePath("used-passes")
    }
    if let t = o.value("trust") { settings.trustFile = t }
    if let k = o.value("site-key") { settings.siteKeyFile = k }
    if let r = o.value("revocation") { settings.revocationFile = r }
    if let z = o.value("zones") { settings.zones = z.split(separator: ",").map(String.init) }
    if let p = o.value("time-policy") {
      guard let policy = TimePolicy(rawValue: p) else { throw ParseError(message: "--time-policy deny|floor") }
      settings.timePolicy = policy
    }
    guard let trustPath = settings.trustFile else { throw ParseError(message: "no trust file ([credentials] trust_file, or --trust FILE)") }
    var text = o.positionals.first ?? "-"
    if text == "-" { text = readLine(strippingNewline: true) ?? "" }
    let now = try o.value("at").map(time) ?? Int64(Glibc.time(nil))
    var siteKey: [UInt8]? = nil
    if let k = settings.siteKeyFile { siteKey = try CredentialFiles.readSecretKey(k) }
    let crypto = SodiumCredentialCrypto(siteSecretKey: siteKey)
    let sign1 = Sign1Verifier(trust: try CredentialFiles.readTrust(trustPath), codec: LibCBOR(), crypto: crypto)
    let verifier = CredentialVerifier(settings: settings, sign1: sign1)
    verifier.hasSiteKey = crypto.hasSiteKey
    if let r = settings.revocationFile {
      let bytes = try readWholeFile(r, maxBytes: CredentialFiles.revocationBytesMax)
      verifier.revocation = try bytes.withUnsafeBytes { b throws(ParseError) in
        try CredentialFiles.parseRevocation(b, sign1: sign1, now: now, current: 0)
      }
    }
    // The reader's counted uses, when it is this reader's configuration (read, never counted here).
    if let u = usedPath, fileExists(u) { verifier.useStore = try UsedCredentialFile(path: u, capacity: settings.singleUseEntries) }
    // A tool judging a pass has no clock state of its own: it trusts the time it is given.
    verifier.clock = .trusted
    let bytes = Array(text.utf8)
    let problem: CredentialProblem? = bytes.withUnsafeBytes { b in
      do throws(CredentialProblem) {
        try verifier.verify(b, now: now, mode: .inspect)
        return nil
      } catch { return error }
    }
    let repeats = try o.integer("repeat", default: 0, range: 0...10_000_000)
    if repeats > 0 {
      // Verification time on this machine (bench/): the same check a reader makes, repeated.
      var t0 = timespec(), t1 = timespec()
      clock_gettime(CLOCK_MONOTONIC, &t0)
      bytes.withUnsafeBytes { b in for _ in 0..<repeats { _ = verifier.decide(b, nowUnixSeconds: now, mode: .inspect) } }
      clock_gettime(CLOCK_MONOTONIC, &t1)
      let ns = Double(t1.tv_sec - t0.tv_sec) * 1e9 + Double(t1.tv_nsec - t0.tv_nsec)
      writeStandardError("verification: \(repeats) in \(formatMilliseconds(ns / 1e6)) ms, \(formatMilliseconds(ns / Double(repeats) / 1e3)) µs each\n")
    }
    let c = verifier.last
    let verdict = problem?.verdict ?? .granted
    let parsed = c.idCount > 0
    let id = parsed ? withUnsafeBytes(of: c.id) { CredentialID(UnsafeRawBufferPointer(rebasing: $0[0..<c.idCount])) } : nil
    let used = id.flatMap { verifier.useStore?.usage($0) }
    // A PIN claim opens only with the site key (the reader's); without it, it is only there.
    let pinOpens = c.hasPin && verifier.pinVerifier() != nil
    if o.flag("json") {
      var j = "{\"verdict\":\(jsonString(verdict.name)),\"reason\":\(jsonString(problem?.name ?? "ok"))"
      if parsed {
        j += ",\"kid\":\(jsonString(c.kidText)),\"sub\":\(jsonString(c.subjectText)),\"cti\":\(jsonString(c.idHex))"
        j += ",\"label\":\(jsonString(c.labelText)),\"exp\":\(c.expires)"
        if let nbf = c.notBefore { j += ",\"nbf\":\(nbf)" }
        if let iat = c.issuedAt { j += ",\"iat\":\(iat)" }
        j += ",\"zones\":[\(c.zones.map(jsonString).joined(separator: ","))],\"single_use\":\(c.singleUse),\"lockdown\":\(c.lockdown),\"rotating\":\(c.rotates)"
        if c.uses > 0 { j += ",\"uses\":\(c.uses)" }
        if c.firstUseWindow > 0 { j += ",\"first_use_window\":\(c.firstUseWindow)" }
        if let used { j += ",\"used\":\(used.uses)" + (used.firstUse > 0 ? ",\"first_use\":\(used.firstUse)" : "") }
        if c.rotates { j += ",\"digits\":\(c.digits)" }
        if let f = c.cardFacility, let n = c.cardNumber { j += ",\"card\":{\"facility\":\(f),\"number\":\(n)}" }
        if c.hasPin { j += ",\"pin\":true,\"pin_opens\":\(pinOpens)" }
      }
      print(j + "}")
    } else {
      print("verdict  \(verdict.name)\(problem.map { " (\($0.name))" } ?? "")")
      if parsed {
        print("issuer   \(c.kidText)")
        print("holder   \(c.subjectText)\(c.labelCount > 0 ? " (\(c.labelText))" : "")")
        print("id       \(c.idHex)")
        print("valid    \(c.notBefore.map(RFC3339.format) ?? "-") .. \(RFC3339.format(c.expires))")
        if c.zoneCount > 0 { print("zones    \(c.zones.joined(separator: ", "))") }
        print(
          "kind     \(c.rotates ? "rotating, \(c.digits)-digit TOTP" : "static")\(c.singleUse ? ", single use" : "")"
            + (c.uses > 0 ? ", \(c.uses) uses" : "") + (c.firstUseWindow > 0 ? ", valid for \(c.firstUseWindow) s from its first use" : "")
            + (c.lockdown ? ", granted during a lockdown" : ""))
        if let used { print("used     \(used.uses) time(s)" + (used.firstUse > 0 ? ", first at \(RFC3339.format(used.firstUse))" : "")) }
        if let f = c.cardFacility, let n = c.cardNumber { print("card     \(f):\(n)") }
        if c.hasPin {
          print(
            "pin      a PIN after the pass, its verifier sealed to the site key (\(pinOpens ? "opens with this site key" : "not opened: no site key here, or another site's"))"
          )
        }
      }
    }
    return verdict.isGranted ? 0 : 1
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

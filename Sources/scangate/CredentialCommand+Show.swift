import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

extension CredentialCommand {
  /// show [--config FILE | --trust FILE [--site-key FILE] [--zones A,B]] [--at TIME] [--json] TEXT|-:
  /// decodes and verifies like a reader would (nothing is recorded); exit 0 when it would open.
  static func show(_ arguments: [String]) throws -> Int32 {
    let o = try Options(
      arguments, valued: ["config", "trust", "site-key", "revocation", "at", "zones", "time-policy", "repeat"], known: ["json"])
    guard let (settings, usedPath, siteKeyPath) = try showSettings(o) else { return 1 }
    guard let trustPath = settings.trustFile else { throw ParseError(message: "no trust file ([credentials] trust_file, or --trust FILE)") }
    var text = o.positionals.first ?? "-"
    if text == "-" { text = readLine(strippingNewline: true) ?? "" }
    let now = try o.value("at").map(time) ?? Int64(Glibc.time(nil))
    let verifier = try showVerifier(settings, trustPath: trustPath, usedPath: usedPath, now: now)
    if let siteKeyPath, let store = verifier.useStore {
      // Uses counted site-wide are kept under the pass's site identity: read them as the reader does.
      do {
        verifier.useStore = SiteUses(
          readerID: "", topicPrefix: "", siteKey: try TagKey.loadSiteKey(siteKeyPath), store: store, offline: .allow,
          linkConnected: { true })
      } catch {
        writeStandardError("scangate: credential show: uses counted site-wide, and the site key cannot be read (\(error)): uses at this reader only\n")
      }
    }
    let bytes = Array(text.utf8)
    let problem: CredentialProblem? = bytes.withUnsafeBytes { b in
      do throws(CredentialProblem) {
        try verifier.verify(b, now: now, mode: .inspect)
        return nil
      } catch { return error }
    }
    let repeats = try o.integer("repeat", default: 0, range: 0...10_000_000)
    if repeats > 0 { timeVerification(verifier, bytes, now: now, repeats: repeats) }
    let shown = ShownPass(verifier, problem: problem)
    if o.flag("json") { shown.printJSON() } else { shown.printText() }
    return shown.verdict.isGranted ? 0 : 1
  }

  /// The settings `show` judges by: the configuration's (nil when it does not load) unless
  /// --trust is given, with --site-key, --revocation, --zones and --time-policy over them; and
  /// the reader's used-passes file and, when it counts uses site-wide, its site key, when they
  /// are its configuration's.
  static func showSettings(_ o: Options) throws -> (settings: CredentialSettings, usedPath: String?, siteKeyPath: String?)? {
    var settings = CredentialSettings()
    var usedPath: String? = nil
    var siteKeyPath: String? = nil
    if o.value("trust") == nil {
      guard let config = loadConfig(o) else { return nil }
      settings = config.credentials
      usedPath = settings.usedFile ?? config.statePath("used-passes")
      if settings.usesScope == .site { siteKeyPath = config.siteKeyFile }
    }
    if let t = o.value("trust") { settings.trustFile = t }
    if let k = o.value("site-key") { settings.siteKeyFile = k }
    if let r = o.value("revocation") { settings.revocationFile = r }
    if let z = o.value("zones") { settings.zones = z.split(separator: ",").map(String.init) }
    if let p = o.value("time-policy") {
      guard let policy = TimePolicy(rawValue: p) else { throw ParseError(message: "--time-policy deny|floor") }
      settings.timePolicy = policy
    }
    return (settings, usedPath, siteKeyPath)
  }

  /// A verifier as the reader's: its trust file, site key, revocation list and counted uses.
  static func showVerifier(_ settings: CredentialSettings, trustPath: String, usedPath: String?, now: Int64) throws -> CredentialVerifier {
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
    return verifier
  }

  /// Verification time on this machine (bench/): the same check a reader makes, repeated.
  static func timeVerification(_ verifier: CredentialVerifier, _ bytes: [UInt8], now: Int64, repeats: Int) {
    var t0 = timespec(), t1 = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t0)
    bytes.withUnsafeBytes { b in for _ in 0..<repeats { _ = verifier.decide(b, nowUnixSeconds: now, mode: .inspect) } }
    clock_gettime(CLOCK_MONOTONIC, &t1)
    let ns = Double(t1.tv_sec - t0.tv_sec) * 1e9 + Double(t1.tv_nsec - t0.tv_nsec)
    writeStandardError("verification: \(repeats) in \(formatMilliseconds(ns / 1e6)) ms, \(formatMilliseconds(ns / Double(repeats) / 1e3)) µs each\n")
  }

  /// A pass as `show` reports it: its verdict, its claims (when they decoded) and what this
  /// reader knows of it.
  struct ShownPass {
    var claims: CredentialClaims
    var verdict: Verdict
    var problem: CredentialProblem?
    /// Its counted uses in the reader's used-passes file.
    var used: (uses: Int, firstUse: Int64)?
    /// A PIN claim opens only with the site key (the reader's); without it, it is only there.
    var pinOpens: Bool
    var parsed: Bool { claims.idCount > 0 }

    /// The verifier's last claims and `problem` (nil: it would open).
    init(_ verifier: CredentialVerifier, problem: CredentialProblem?) {
      let c = verifier.last
      claims = c
      verdict = problem?.verdict ?? .granted
      self.problem = problem
      let id = c.idCount > 0 ? withUnsafeBytes(of: c.id) { CredentialID(UnsafeRawBufferPointer(rebasing: $0[0..<c.idCount])) } : nil
      used = id.flatMap { verifier.useStore?.usage($0) }
      pinOpens = c.hasPin && verifier.pinVerifier() != nil
    }

    /// Prints the report as one JSON object (--json).
    func printJSON() {
      let c = claims
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
    }

    /// Prints the report as aligned lines for a person.
    func printText() {
      let c = claims
      print("verdict  \(verdict.name)\(problem.map { " (\($0.name))" } ?? "")")
      guard parsed else { return }
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
}

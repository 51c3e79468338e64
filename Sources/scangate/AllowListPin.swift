import Glibc
import ScanCore
import ScanLinux
import ScanTools

/// `scangate allow-list pin-key FILE` and `scangate allow-list pin …` (docs/admin.md, "PIN"):
/// the PIN key, and an entry's `pin=` (a keyed hash bound to its code, never the PIN).
extension AllowListCommand {
  /// pin-key FILE: a new 32-byte key in a secret file (0600, never overwritten).
  static func pinKey(_ arguments: [String]) throws -> Int32 {
    let o = try Options(arguments, valued: [], known: [])
    guard let path = o.positionals.first, o.positionals.count == 1 else { throw ParseError(message: "pin-key FILE") }
    var key = CredentialIssuer.randomBytes(32)
    defer { SecretBytes.wipe(&key) }
    try SecretFile.create(path, Array(Hex.string(key).utf8) + [0x0A])
    print("# PIN key written to \(path): set [keypad] pin_key_file to it on every reader whose list has pin= entries")
    return 0
  }

  /// pin [--config FILE] [--pin-key FILE] (--label NAME | --text PAYLOAD | --sha256 HEX): reads the
  /// PIN (4–12 digits) from standard input. With --label, the entry's line gets `pin=` (written
  /// durably; the reader reloads it); otherwise `pin=<hex>` is printed for a line of one's own.
  static func pin(_ arguments: [String]) throws -> Int32 {
    let o = try Options(arguments, valued: ["config", "pin-key", "label", "text", "sha256"], known: [])
    let config = o.value("config") != nil || o.value("label") != nil || o.value("pin-key") == nil ? loadConfig(o) : nil
    guard let keyPath = o.value("pin-key") ?? config.map(\.keypad.pinKeyFile), !keyPath.isEmpty else {
      throw ParseError(message: "no PIN key ([keypad] pin_key_file, or --pin-key FILE)")
    }
    var key = try CredentialFiles.readSecretKey(keyPath)
    defer { SecretBytes.wipe(&key) }
    var pin = Array((readLine(strippingNewline: true) ?? "").utf8)
    defer { SecretBytes.wipe(&pin) }
    guard (PinEntry.digitsMin...PinEntry.digitsMax).contains(pin.count), pin.allSatisfy({ (0x30...0x39).contains($0) }) else {
      throw ParseError(message: "the PIN (standard input) must be \(PinEntry.digitsMin) to \(PinEntry.digitsMax) digits")
    }
    let digester = SodiumDigester()
    func verifier(_ digest: Digest) -> String {
      let v = key.withUnsafeBytes { k in pin.withUnsafeBytes { PinMAC.verifier(key: k, digest: digest, pin: $0) } }
      return AllowListImport.hex(v)
    }
    if let text = o.value("text") {
      print("pin=" + verifier(Array(text.utf8).withUnsafeBytes { digester.sha256($0) }))
      return 0
    }
    if let sha = o.value("sha256") {
      guard let digest = Digest(hex: sha.lowercased()) else { throw ParseError(message: "--sha256 wants 64 hex digits") }
      print("pin=" + verifier(digest))
      return 0
    }
    guard let label = o.value("label"), let config else { throw ParseError(message: "give --label NAME, --text PAYLOAD or --sha256 HEX") }
    let path = config.allowListPath
    guard !path.isEmpty else { throw ParseError(message: "no [allow_list] path") }
    let limits = config.engine.allowList
    var text: [UInt8]
    switch AllowListFile.read(path, maxBytes: limits.fileBytesMax) {
    case .success(let bytes): text = bytes
    case .failure(let failure): throw ParseError(message: "\(path): \(failure.error)")
    }
    guard let entry = AllowListEdit.entries(text).first(where: { $0.label == label }) else {
      throw ParseError(message: "\(path): no entry is labelled \(label)")
    }
    guard let digest = AllowListImport.digestOf(entry.match, digester: digester) else { throw ParseError(message: "\(path): the entry's code does not read") }
    let fields = entry.fields.filter { !$0.hasPrefix("pin=") } + ["pin=" + verifier(digest)]
    text = AllowListEdit.replacingLine(entry.line, with: ([entry.match] + fields).joined(separator: " "), in: text)
    var list = AllowList(limits: limits)
    if let error = list.validate(text, digester: digester) { throw ParseError(message: "the result would not load (\(error))") }
    var status = stat()
    let mode = (try? syscall("stat", { stat(path, &status) })) != nil ? UInt32(status.st_mode & 0o777) : 0o640
    try writeFileAtomically(path, text, mode: mode)
    print("\(path): \(label) now needs a PIN after the pass (the reader reloads the file)")
    // A PIN nobody can be asked for is never skipped: say so where the admin set it.
    if !CheckConfigFiles.asksForPin(config) {
      print(
        "note: this reader has no keypad that asks for a PIN (\(config.keypad.enabled ? "panel mode: the keys go to the panel" : "no [keypad]")): "
          + "\(label) is denied-pin-unavailable here until one is configured")
    }
    return 0
  }
}

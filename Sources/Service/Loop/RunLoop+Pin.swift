import ScanConsole
import ScanCore
import ScanLinux

/// The console's PIN (docs/console.md, "People"): an entry's `pin=` made on the reader under the
/// keypad's PIN key (the key never leaves the keypad), or taken off; the file edited through the
/// one durable write and reloaded; recorded with who, never the PIN. Refused where no keypad asks
/// for a PIN: a PIN set there would only make the person `denied-pin-unavailable`.
extension RunLoop where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  public mutating func setPin(label: UnsafeRawBufferPointer, pin: UnsafeRawBufferPointer?, who: UnsafeRawBufferPointer) -> AllowListChange {
    guard let path = settings.allowListPath, !path.isEmpty else {
      return .refused(code: 503, reason: "no allow_list.path is configured: there is no file to edit")
    }
    let verifier = helpers.pinVerifier
    if pin != nil && verifier == nil {
      return .refused(code: 503, reason: "no keypad asks for a PIN on this reader ([keypad] with pin_key_file): not set")
    }
    let name = String(decoding: label, as: UTF8.self), digester = engine.digester
    var tag = Digest.zero
    let edited = editAllowList(path) { text in
      guard let found = AllowListEdit.entry(labelled: name, in: text) else {
        return .failure(AllowListEdit.Refusal("no entry labelled \(name) in the allow-list file"))
      }
      var fields = found.fields.filter { !$0.hasPrefix("pin=") }
      guard let digest = AllowListImport.digestOf(found.match, digester: digester) else {
        return .failure(AllowListEdit.Refusal("the entry labelled \(name) has a code that does not read"))
      }
      tag = digest
      if let pin, let verifier {
        fields.append("pin=" + AllowListImport.hex(verifier(digest, pin)))
      } else if fields.count == found.fields.count {
        return .failure(AllowListEdit.Refusal("\(name) has no PIN"))
      }
      return .success(AllowListEdit.replacingLine(found.line, with: ([found.match] + fields).joined(separator: " "), in: text))
    }
    if case .refused(let code, let reason) = edited { return .refused(code: code, reason: reason) }
    let shownTag = engine.tagger.map { $0.tag(tag) } ?? .zero
    let sequence = recordPeopleChange(pin != nil ? "PIN SET by " : "PIN CLEAR by ", who: who, label: label, tag: shownTag)
    return .pinChanged(set: pin != nil, version: engine.allowList.version, sequence: sequence)
  }
}

/// The console's PASSES: the counted passes the credential verifier's use store remembers.
extension RunLoop where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  public func writePasses(_ count: Int, into w: inout ByteWriter) -> (shown: Int, total: Int) {
    guard let store = engine.policy.credentials?.useStore else { return (0, 0) }
    var all: [(id: CredentialID, uses: Int, first: Int64, until: Int64)] = []
    store.forEachUse { all.append(($0, $1, $2, $3)) }
    all.sort { $0.first > $1.first }
    for p in all.prefix(count) {
      w.write("| id=")
      for b in p.id.bytes { w.write(AllowListImport.hexPair(b)) }
      w.write(" uses=")
      w.write(p.uses)
      w.write(" first=")
      w.write(p.first == 0 ? "unknown" : RFC3339.format(p.first))
      w.write(" until=")
      w.write(p.until == .max || p.until <= 0 ? "-" : RFC3339.format(p.until))
      w.newline()
    }
    return (min(count, all.count), all.count)
  }
}

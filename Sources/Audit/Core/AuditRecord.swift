import ScanBase

/// A keyed MAC over bytes (HMAC-SHA-256 under the audit log's chain key: a crypto library
/// does it, not the core).
public protocol RecordAuthenticator {
  func authenticate(_ bytes: UnsafeRawBufferPointer) -> Digest
}

/// One record of the durable audit log: what an event says, in the form that is stored and
/// chained. Built from a `ScanEvent` by the log writer (off the frame path).
public struct AuditRecord: Equatable, Sendable {
  /// The log's own sequence number: gapless from 1 for the life of the file.
  public var sequence: Int64
  /// Which start of the service wrote it (a counter kept in the file).
  public var run: Int64
  /// The loop's event sequence within that run (what the console shows as `#N`).
  public var eventSequence: Int64
  public var wallNanoseconds: Int64
  public var kind: EventKind
  /// The decision's verdict; nil for every other kind (stored as "").
  public var verdict: Verdict?
  public var format: String
  public var variant: String
  /// The payload's keyed tag (`PayloadTag.hex`: 16 hex digits; empty when the record is not
  /// about a payload or the reader had no tag key). Never an unkeyed digest of the payload, which
  /// would let whoever reads the log or its fleet messages test guessed payloads offline (logs
  /// written before tags hold the SHA-256 here, 64 digits).
  public var tag: String
  public var label: String
  /// The payload, percent-escaped; empty unless the configuration asks for raw payloads
  /// (commands are always kept: they are what the technician typed, secrets masked).
  public var payload: String
  public var code: Int64
  public var detail: String
  public var decodeMicroseconds: Int64
  public var decideMicroseconds: Int64
  public var edgeMicroseconds: Int64

  public init(
    sequence: Int64, run: Int64, eventSequence: Int64, wallNanoseconds: Int64, kind: EventKind,
    verdict: Verdict? = nil, format: String = "", variant: String = "", tag: String = "", label: String = "",
    payload: String = "", code: Int64 = 0, detail: String = "", decodeMicroseconds: Int64 = 0,
    decideMicroseconds: Int64 = 0, edgeMicroseconds: Int64 = 0
  ) {
    self.sequence = sequence; self.run = run; self.eventSequence = eventSequence
    self.wallNanoseconds = wallNanoseconds; self.kind = kind; self.verdict = verdict; self.format = format
    self.variant = variant; self.tag = tag; self.label = label; self.payload = payload; self.code = code
    self.detail = detail; self.decodeMicroseconds = decodeMicroseconds; self.decideMicroseconds = decideMicroseconds
    self.edgeMicroseconds = edgeMicroseconds
  }

  /// Whether an event of this kind goes to the log (edges and "left" are not audit facts).
  public static func isLogged(_ kind: EventKind) -> Bool {
    switch kind {
    case .decision, .fault, .state, .command, .authFailure, .manualOpen: true
    case .doorUnlocked, .doorOpened, .doorClosed, .doorHeldOpen, .doorForced, .doorLocked, .exitRequest, .tamper, .unlockWindow: true
    case .panelLink, .panelSecure, .panelCard, .panelKey: true
    case .turnstileUnlocked, .passage, .grantedNotPassed, .turnstileForced, .turnstileLocked, .passbackForgiven,
      .occupancyReset, .fireAlarm, .lockdown:
      true
    case .panelCommand: false
    case .edge, .left, .recordsLost: false
    }
  }

  /// The record for `event`, with sequence and run filled in by the writer.
  public init(_ e: ScanEvent, sequence: Int64, run: Int64, keepPayload: Bool) {
    self.init(sequence: sequence, run: run, eventSequence: Int64(e.sequence), wallNanoseconds: e.wallNanoseconds, kind: e.kind)
    switch e.kind {
    case .decision:
      verdict = e.verdict
      format = e.format.name
      variant = e.variant.name
      if e.tag != .zero { tag = PayloadTag.hex(e.tag) }
      label = e.withLabel { String(decoding: $0, as: UTF8.self) }
      if keepPayload { payload = e.withPayload { PayloadEscaping.escaped($0) } + (e.payloadTruncated ? "..." : "") }
      decodeMicroseconds = Int64(e.decodeMicroseconds)
      decideMicroseconds = Int64(e.decideMicroseconds)
      edgeMicroseconds = Int64(e.edgeMicroseconds)
      // Which rule decided (the allow-list or a signed credential).
      code = Int64(e.code)
      if let source = DecisionSource(rawValue: UInt8(truncatingIfNeeded: e.code)), source != .none { detail = source.name }
    case .command, .authFailure:
      // The reader's own words with who gave the command: spaces kept, escaped once (writeText).
      payload = e.withPayload { AuditRecord.text($0) }
      code = Int64(e.code)
      // ENROL and REMOVE name the entry they changed: its label and keyed tag.
      if e.tag != .zero { tag = PayloadTag.hex(e.tag) }
      label = e.withLabel { String(decoding: $0, as: UTF8.self) }
    case .fault, .state:
      code = Int64(e.code)
      detail = FaultCode(rawValue: e.code)?.name ?? "code-\(e.code)"
    case .manualOpen:
      code = Int64(e.code)
      detail = e.withLabel { $0.isEmpty ? "" : "by " + String(decoding: $0, as: UTF8.self) }
    case .panelLink, .panelSecure, .panelCard, .panelCommand, .panelKey:
      code = Int64(e.code)
      detail = e.withPayload { String(decoding: $0, as: UTF8.self) }
    case .edge, .left, .recordsLost:
      code = Int64(e.code)
    case .turnstileUnlocked, .passage, .grantedNotPassed, .turnstileForced, .turnstileLocked, .passbackForgiven,
      .occupancyReset, .fireAlarm, .lockdown:
      code = Int64(e.code)
      if e.tag != .zero { tag = PayloadTag.hex(e.tag) }
      label = e.withLabel { String(decoding: $0, as: UTF8.self) }
      detail = PassageText.detail(e)
    case .doorUnlocked, .doorOpened, .doorClosed, .doorHeldOpen, .doorForced, .doorLocked, .exitRequest, .tamper, .unlockWindow:
      code = Int64(e.code)
      detail = DoorText.detail(e.kind, code: e.code)
    }
  }

  /// The bytes the chain covers: every field, in order, unambiguously separated (kind and
  /// verdict by their stable text, so the form is the same as before they were enums).
  public var canonicalBytes: [UInt8] {
    var fields: [String] = [
      String(sequence), String(run), String(eventSequence), String(wallNanoseconds), kind.name, verdict?.name ?? "",
      format, variant,
      tag, label, payload, String(code), detail, String(decodeMicroseconds), String(decideMicroseconds),
      String(edgeMicroseconds),
    ]
    // Escaping keeps a field from forging the separator: every field is printable ASCII here.
    fields = fields.map { PayloadEscaping.escaped(Array($0.utf8)) }
    return Array(fields.joined(separator: " ").utf8)
  }

  /// The keyed chain: mac(n) = HMAC-SHA-256(key, mac(n-1) ‖ canonical bytes of record n),
  /// mac(0) = 32 zero bytes (or the anchor of a pruned log).
  public func chainValue(previous: [UInt8], key: some RecordAuthenticator) -> [UInt8] {
    let input = previous + canonicalBytes
    let d = input.withUnsafeBytes { key.authenticate($0) }
    return (0..<32).map { d.byte($0) }
  }

  /// The chain of logs written before the keyed chain: hash(n) = SHA-256(hash(n-1) ‖ canonical
  /// bytes of record n). Anyone who can write the file can recompute it: only for reading
  /// old files (`scangate log verify` on a log that was moved aside as unkeyed).
  public func unkeyedChainedHash(previous: [UInt8], digester: some PayloadDigester) -> [UInt8] {
    let input = previous + canonicalBytes
    let d = input.withUnsafeBytes { digester.sha256($0) }
    return (0..<32).map { d.byte($0) }
  }

  /// `ByteWriter.writeText`'s form as a String.
  static func text(_ bytes: UnsafeRawBufferPointer) -> String {
    String(unsafeUninitializedCapacity: bytes.count * 3) { out in
      var w = ByteWriter(UnsafeMutableRawBufferPointer(out))
      w.writeText(bytes)
      return w.count
    }
  }

  /// A one-line human form (for `scangate log` and the console's LOG).
  public var line: String {
    var s = "\(sequence) \(RFC3339.format(wallNanoseconds / 1_000_000_000)) run \(run) #\(eventSequence) \(kind.name)"
    if let verdict { s += " \(verdict.name) \(format)" }
    if !variant.isEmpty && variant != "upright" { s += " [\(variant)]" }
    // Escaped as event lines escape it (`ivy%20smith`): one word, the same text everywhere.
    if !label.isEmpty { s += " label=\(PayloadEscaping.escaped(Array(label.utf8)))" }
    // A record written before tags holds the payload's SHA-256 (64 digits): named as what it is.
    if !tag.isEmpty { s += " \(tag.count == 64 ? "sha256" : "tag")=\(tag.prefix(PayloadTag.shownBytes * 2))" }
    if !payload.isEmpty { s += " \(kind == .decision ? "payload=" : "")\(payload)" }
    if !detail.isEmpty { s += " \(detail)" }
    if kind == .manualOpen { s += " relay \(code)ms" }
    if kind == .recordsLost { s += " (\(code) events)" }
    if kind == .decision { s += " edge=\(edgeMicroseconds)us" }
    return s
  }
}

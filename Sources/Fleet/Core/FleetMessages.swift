import ScanAudit
import ScanBase

/// The fleet link's wire forms: topics, the event message (one audit record as JSON) and the
/// reader's state message. Built off the frame path, on the link's thread.
public struct FleetTopics: Sendable, Equatable {
  public let base: String
  public init(prefix: String, readerID: String) { base = prefix + "/" + readerID }
  /// Audit records, QoS 1, not retained.
  public var events: String { base + "/events" }
  /// "online" / "offline" (the last will), retained: availability.
  public var status: String { base + "/status" }
  /// The last decision and frame rate (JSON), retained.
  public var state: String { base + "/state" }
  /// Signed bundles in.
  public var bundle: String { base + "/bundle" }
  /// Signed commands in, and their results out.
  public var command: String { base + "/command" }
  public var reply: String { base + "/reply" }
  /// A snapshot command's PNG, QoS 1, not retained.
  public var snapshot: String { base + "/snapshot" }
  /// Home Assistant's decision event entity: one message per decision (not retained: Home
  /// Assistant ignores a retained event), `AuditRecord.homeAssistantEventJSON`.
  public var decision: String { base + "/decision" }
}

/// A JSON object written field by field (keys are ours; values are escaped per RFC 8259).
public struct JSONObject {
  public private(set) var text: String = "{"
  private var first = true
  public init() {}

  private mutating func key(_ k: String) {
    if !first { text += "," }
    first = false
    text += "\""
    text += k
    text += "\":"
  }
  public mutating func add(_ k: String, _ value: String) {
    key(k)
    Self.appendString(value, to: &text)
  }
  public mutating func add(_ k: String, _ value: Int64) {
    key(k)
    text += String(value)
  }
  public mutating func add(_ k: String, _ value: Int) { add(k, Int64(value)) }
  public mutating func add(_ k: String, _ value: Bool) {
    key(k)
    text += value ? "true" : "false"
  }
  /// A value that is already JSON (a nested object or array).
  public mutating func add(_ k: String, raw: String) {
    key(k)
    text += raw
  }
  public var json: String { text + "}" }
  public var bytes: [UInt8] { Array(json.utf8) }

  /// Appends `s` as a JSON string: quotes and backslash escaped, and every control character
  /// (C0, DEL, C1) and the JavaScript line separators as \u escapes, so no scanned or remote
  /// text reaches a terminal or a parser raw.
  public static func appendString(_ s: String, to out: inout String) {
    out += "\""
    for u in s.unicodeScalars {
      switch u {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      default:
        if u.value < 0x20 || u.value == 0x7F || (u.value >= 0x80 && u.value < 0xA0) || u.value == 0x2028 || u.value == 0x2029 {
          let hex = String(u.value, radix: 16)
          out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        } else {
          out.unicodeScalars.append(u)
        }
      }
    }
    out += "\""
  }

  public static func string(_ s: String) -> String {
    var out = ""
    appendString(s, to: &out)
    return out
  }
}

extension AuditRecord {
  /// The event message: the record with the reader id, the id of the log it belongs to
  /// (`log`, 32 hex digits; absent for a log made before log ids) and its audit sequence
  /// (`seq`, gapless within that log: consumers de-duplicate by (reader, log, seq) and see
  /// gaps; a new log id is a new log, whose sequence starts again). A payload is named by its
  /// keyed `tag`, never by a digest anyone could recompute.
  public func fleetJSON(readerID: String, log: String = "") -> [UInt8] {
    var o = JSONObject()
    o.add("reader", readerID)
    if !log.isEmpty { o.add("log", log) }
    o.add("seq", sequence)
    o.add("run", run)
    o.add("event", eventSequence)
    o.add("time", RFC3339.format(wallNanoseconds / 1_000_000_000))
    o.add("time_ns", wallNanoseconds)
    o.add("kind", kind.name)
    if let verdict { o.add("verdict", verdict.name) }
    if !format.isEmpty { o.add("format", format) }
    if !variant.isEmpty { o.add("variant", variant) }
    // The keyed tag only: a log written before tags holds the payload's SHA-256 in this field,
    // and that is never published (it would let every subscriber test guessed payloads).
    if tag.count == PayloadTag.shownBytes * 2 { o.add("tag", tag) }
    if !label.isEmpty { o.add("label", label) }
    if !payload.isEmpty { o.add("payload", payload) }
    o.add("code", code)
    if !detail.isEmpty { o.add("detail", detail) }
    if kind == .decision {
      o.add("decode_us", decodeMicroseconds)
      o.add("decide_us", decideMicroseconds)
      o.add("edge_us", edgeMicroseconds)
    }
    return o.bytes
  }
}

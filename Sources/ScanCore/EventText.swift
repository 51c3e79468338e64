/// Human-readable event lines for logs, the demo and the console (allocates: never on the
/// frame path). Payloads and labels are always percent-escaped.
public enum EventText {
  /// `#12 +3.456s decision granted qr label=alice payload=ALICE-0001 decode=1.20ms edge=1.31ms`
  public static func line(_ e: ScanEvent, since start: Instant) -> String {
    let t = e.monotonic.microseconds(since: start)
    var s = "#\(e.sequence) +\(t / 1_000_000).\(pad3(t / 1000 % 1000))s \(e.kind.name)"
    switch e.kind {
    case .decision:
      s += " \(e.verdict.name) \(e.format.name)"
      if e.variant != .upright { s += " [\(e.variant.name)]" }
      if e.labelCount > 0 { s += " label=" + e.withLabel { String(decoding: $0, as: UTF8.self) } }
      s += " payload=" + e.withPayload { PayloadEscaping.escaped($0) } + (e.payloadTruncated ? "…" : "")
      s += " sha256=" + digestPrefix(e.digest)
      s += " decode=\(milliseconds(e.decodeMicroseconds))ms"
      if e.edgeMicroseconds > 0 { s += " edge=\(milliseconds(e.edgeMicroseconds))ms" }
    case .left:
      s += " sha256=" + digestPrefix(e.digest)
    case .edge:
      s += " " + EdgeCode.describe(e.code)
    case .fault, .state:
      s += " " + (FaultCode(rawValue: e.code)?.name ?? "code-\(e.code)")
    case .manualOpen:
      s += " relay \(e.code)ms"
    case .command, .authFailure:
      s += " " + e.withPayload { PayloadEscaping.escaped($0) }
    }
    return s
  }

  static func pad3(_ n: UInt64) -> String { n < 10 ? "00\(n)" : n < 100 ? "0\(n)" : "\(n)" }
  static func milliseconds(_ us: UInt32) -> String { "\(us / 1000).\(pad3(UInt64(us % 1000)).prefix(2))" }
  /// The first 8 bytes of a digest in hex.
  public static func digestPrefix(_ d: Digest) -> String {
    let digits = Array("0123456789abcdef")
    var s = ""
    for i in 0..<8 {
      let b = d.byte(i)
      s.append(digits[Int(b >> 4)])
      s.append(digits[Int(b & 0xF)])
    }
    return s
  }
}

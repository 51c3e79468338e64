// libFuzzer harness for the console's parsers: the line framer and the request parser, fed
// arbitrary bytes. Built by fuzz/run (swiftc -sanitize=fuzzer,address); any crash, overflow or
// failed precondition is a finding.
import ScanConsole
import ScanCore

nonisolated(unsafe) var framer = LineFramer(capacity: 512)
nonisolated(unsafe) let argument = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 8)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = UnsafeRawBufferPointer(start: data, count: size)
  // Split the input at an arbitrary point so chunking is exercised too.
  let cut = size > 0 ? Int(bytes[0]) % (size + 1) : 0
  for part in [UnsafeRawBufferPointer(rebasing: bytes[0..<cut]), UnsafeRawBufferPointer(rebasing: bytes[cut...])] {
    framer.feed(part) { output in
      guard case .line(let line) = output else { return }
      precondition(line.count <= 512)
      var count = 0
      if case .success(let request)? = ConsoleRequest.parse(line, argument: argument, argumentCount: &count) {
        precondition(count <= 512)
        _ = request.verb.name
      }
    }
  }
  // The allow-list and payload parsers see outside input too.
  var out = [UInt8](repeating: 0, count: 64)
  out.withUnsafeMutableBytes { _ = PayloadEscaping.escape(bytes, into: $0) }
  _ = PayloadKind.classify(bytes)
  if let text = String(validating: bytes, as: UTF8.self) {
    _ = try? RFC3339.parse(text[...])
    _ = try? PayloadEscaping.unescape(text[...].utf8)
    _ = WiFiCredentials(text)
  }
  return 0
}

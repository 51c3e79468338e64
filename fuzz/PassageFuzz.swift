// libFuzzer harness for the turnstile's and emergency's inputs from outside: a site passage from
// the broker and a counted use (before the MAC is checked, so parsed as hostile), and the records of the state
// files (the lockdown latch, an anti-passback slot, the occupancy) as a damaged disk gives them.
import ScanCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  if case .success(let p) = SitePassage.parse(bytes, ownReader: "gate-self", nowUnixSeconds: 1_800_000_000) {
    // What parses is bounded and prints back to the same message.
    precondition(bytes.count <= SitePassage.bytesMax && p.reader != "gate-self")
    precondition(p.message(mac: p.mac) == bytes)
  }
  // A counted use from another reader of the site: the same frame, the same rule.
  if case .success(let u) = SiteUse.parse(bytes, ownReader: "gate-self", nowUnixSeconds: 1_800_000_000) {
    precondition(bytes.count <= SiteMessage.bytesMax && u.reader != "gate-self")
    precondition(u.message(mac: u.mac) == bytes)
  }
  bytes.withUnsafeBytes { raw in
    if let latch = LockdownLatch(decoding: raw) {
      var out = [UInt8](repeating: 0, count: LockdownLatch.encodedBytes)
      out.withUnsafeMutableBytes { latch.encode(into: $0) }
      precondition(out == bytes, "a latch that decodes encodes back to the same bytes")
    }
    if let record = PassbackRecord(decoding: raw) {
      var out = [UInt8](repeating: 0, count: PassbackRecord.encodedBytes)
      out.withUnsafeMutableBytes { record.encode(into: $0) }
      precondition(out == bytes)
    }
    if let occupancy = Occupancy(decoding: raw) {
      precondition(occupancy.count >= 0)
    }
  }
  return 0
}

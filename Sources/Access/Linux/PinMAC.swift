import CLinux
import ScanCore

/// The PIN verifiers' MAC (docs/admin.md "PIN after the pass"), in one place for the reader's
/// keypad, `allow-list pin` and `credential issue --pin`.
public enum PinMAC {
  /// HMAC-SHA-256(key, "scangate-pin-v1" 0x00 digest pin) for `pin` (ASCII digits). An
  /// allow-list entry's `pin=`: `key` the site's PIN key, `digest` the SHA-256 of the entry's
  /// code. A signed pass's sealed PIN claim holds its salt and this MAC with `key` the salt and
  /// `digest` 32 zero bytes.
  public static func verifier(key: UnsafeRawBufferPointer, digest: Digest, pin: UnsafeRawBufferPointer) -> Digest {
    precondition(pin.count <= PinEntry.digitsMax)
    var message = InlineArray<64, UInt8>(repeating: 0)
    var n = 0
    for b in "scangate-pin-v1".utf8 {
      message[n] = b
      n += 1
    }
    n += 1  // the 0x00 separator
    for i in 0..<32 {
      message[n] = digest.byte(i)
      n += 1
    }
    for b in pin {
      message[n] = b
      n += 1
    }
    var out = InlineArray<32, UInt8>(repeating: 0)
    let length = n
    withUnsafeBytes(of: message) { m in
      withUnsafeMutableBytes(of: &out) { o in
        sg_hmac_sha256(
          key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count, m.baseAddress!.assumingMemoryBound(to: UInt8.self),
          length, o.baseAddress!.assumingMemoryBound(to: UInt8.self))
      }
    }
    withUnsafeMutableBytes(of: &message) { sg_memzero($0.baseAddress, $0.count) }
    return withUnsafeBytes(of: out) { Digest(bytes: $0) }
  }
}

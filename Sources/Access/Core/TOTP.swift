/// RFC 6238 TOTP (RFC 4226 dynamic truncation), HMAC-SHA1.
public enum TOTP {
  /// Bytes of scratch `value(key:step:digits:crypto:scratch:)` needs: the counter and the MAC.
  public static let scratchBytes = 28

  /// The TOTP value at `step`, computed in `scratch` (nothing allocated).
  public static func value(
    key: UnsafeRawBufferPointer, step: Int64, digits: Int, crypto: any CredentialCrypto, scratch: UnsafeMutableRawBufferPointer
  ) -> UInt32 {
    precondition(scratch.count >= scratchBytes)
    let counter = UInt64(bitPattern: step)
    for i in 0..<8 { scratch[i] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64(i))) }
    let mac = UnsafeMutableRawBufferPointer(rebasing: scratch[8..<28])
    crypto.hmacSHA1(key: key, message: UnsafeRawBufferPointer(rebasing: scratch[0..<8]), into: mac)
    let offset = Int(mac[19] & 0x0F)
    let binary =
      UInt32(mac[offset] & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
      | UInt32(mac[offset + 3])
    var modulus: UInt32 = 1
    for _ in 0..<digits { modulus *= 10 }
    crypto.wipe(mac)
    return binary % modulus
  }

  /// The same, with scratch of its own (tools and tests).
  public static func value(key: UnsafeRawBufferPointer, step: Int64, digits: Int, crypto: any CredentialCrypto) -> UInt32 {
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: scratchBytes, alignment: 8)
    defer { scratch.deallocate() }
    return value(key: key, step: step, digits: digits, crypto: crypto, scratch: scratch)
  }
}

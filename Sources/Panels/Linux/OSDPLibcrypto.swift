import CTLS
import ScanCore

/// OSDP Secure Channel's AES-128 through OpenSSL's libcrypto (the CTLS shim).
public struct OSDPLibcrypto: OSDPCipher {
  public init() {
    // The first RAND_bytes call seeds the generator (and allocates): do it at startup.
    var warm = (UInt64(0), UInt64(0))
    _ = withUnsafeMutableBytes(of: &warm) { sg_osdp_random($0.baseAddress!, 16) }
  }

  public func encryptBlock(key: UnsafeRawPointer, block: UnsafeMutableRawPointer) {
    precondition(sg_osdp_aes128_encrypt_block(key, block) == 0, "AES-128 key schedule failed")
  }

  public func decryptBlock(key: UnsafeRawPointer, block: UnsafeMutableRawPointer) {
    precondition(sg_osdp_aes128_decrypt_block(key, block) == 0, "AES-128 key schedule failed")
  }

  public func fillRandom(_ bytes: UnsafeMutableRawPointer, count: Int) -> Bool { sg_osdp_random(bytes, count) == 0 }
}

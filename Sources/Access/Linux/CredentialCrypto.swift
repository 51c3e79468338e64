import CCredential
import ScanCore

/// The CBOR seam over libcbor's streaming decoder and encoders (no allocation per call).
public final class LibCBOR: CBORCodec, Sendable {
  public init() {}

  public func item(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> CBORItem? {
    guard offset < buffer.count, let base = buffer.baseAddress else { return nil }
    var item = sg_cbor_item()
    let start = base.assumingMemoryBound(to: UInt8.self) + offset
    let n = sg_cbor_next(start, buffer.count - offset, &item)
    guard n > 0, let type = CBORType(rawValue: item.type) else { return nil }
    var contentStart = offset
    if type == .bytes || type == .text {
      guard let p = item.bytes else { return nil }
      contentStart = offset + (UnsafeRawPointer(p) - UnsafeRawPointer(start))
    }
    return CBORItem(type: type, argument: item.argument, start: contentStart, size: n)
  }

  public func writeHead(
    _ type: CBORType, _ argument: UInt64, into buffer: UnsafeMutableRawBufferPointer, at offset: Int
  )
    -> Int?
  {
    guard type.rawValue <= CBORType.tag.rawValue, offset < buffer.count, let base = buffer.baseAddress else { return nil }
    let n = sg_cbor_head(type.rawValue, argument, base.assumingMemoryBound(to: UInt8.self) + offset, buffer.count - offset)
    return n > 0 ? n : nil
  }
}

/// Ed25519 and sealed boxes from libsodium, HMAC-SHA1 from nettle. Holds the site's X25519
/// key pair (in memory only; wiped when released).
public final class SodiumCredentialCrypto: CredentialCrypto {
  private let siteSecret: UnsafeMutableRawBufferPointer
  private var sitePublic = InlineArray<32, UInt8>(repeating: 0)
  public private(set) var hasSiteKey = false

  /// `siteSecretKey`: 32 bytes, or nil (rotating passes are then refused).
  public init(siteSecretKey: [UInt8]?) {
    _ = sg_credential_crypto_init()
    siteSecret = .allocate(byteCount: 32, alignment: 16)
    siteSecret.initializeMemory(as: UInt8.self, repeating: 0)
    if let key = siteSecretKey, key.count == 32 {
      siteSecret.copyBytes(from: key)
      withUnsafeMutableBytes(of: &sitePublic) { pk in
        hasSiteKey =
          sg_x25519_public(siteSecret.baseAddress!.assumingMemoryBound(to: UInt8.self), pk.baseAddress!.assumingMemoryBound(to: UInt8.self))
          == 0
      }
    }
  }
  deinit {
    sg_wipe(siteSecret.baseAddress, 32)
    siteSecret.deallocate()
  }

  public func verifyEd25519(
    signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, publicKey: UnsafeRawBufferPointer
  )
    -> Bool
  {
    guard signature.count == 64, publicKey.count == 32, let s = signature.baseAddress, let k = publicKey.baseAddress else {
      return false
    }
    return sg_ed25519_verify(
      s.assumingMemoryBound(to: UInt8.self), message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
      k.assumingMemoryBound(to: UInt8.self)) == 0
  }

  public func openSealed(_ sealed: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
    guard hasSiteKey, sealed.count > Int(SG_SEAL_OVERHEAD), sealed.count - Int(SG_SEAL_OVERHEAD) <= out.count,
      let s = sealed.baseAddress, let o = out.baseAddress
    else { return nil }
    let ok = withUnsafeBytes(of: sitePublic) { pk in
      sg_seal_open(
        o.assumingMemoryBound(to: UInt8.self), s.assumingMemoryBound(to: UInt8.self), sealed.count,
        pk.baseAddress!.assumingMemoryBound(to: UInt8.self), siteSecret.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
    }
    return ok ? sealed.count - Int(SG_SEAL_OVERHEAD) : nil
  }

  public func hmacSHA1(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
    precondition(out.count >= 20)
    sg_hmac_sha1(
      key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count, message.baseAddress?.assumingMemoryBound(to: UInt8.self),
      message.count, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
  }

  public func wipe(_ buffer: UnsafeMutableRawBufferPointer) { sg_wipe(buffer.baseAddress, buffer.count) }
}

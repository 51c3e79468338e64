import CLinux
import Glibc
import ScanConsole
import ScanCore
import ScanPlatform

/// The console's operator secret: read once from a file only its owner can read, kept only as
/// a SHA-256 digest, compared in constant time (libsodium). There is no default secret.
public final class OperatorSecret: OperatorSecretVerifier {
  public private(set) var problem: String?
  private var digest: InlineArray<32, UInt8> = .init(repeating: 0)

  public init(file: String) {
    guard !file.isEmpty else {
      problem = "no console.secret_file configured"
      return
    }
    var bytes: [UInt8]
    do { bytes = try SecretFile.read(file) } catch {
      problem = error.description
      return
    }
    defer { bytes.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
    guard bytes.count >= 8 else {
      problem = "\(file): the secret is shorter than 8 bytes"
      return
    }
    let d = bytes.withUnsafeBytes { SodiumDigester().sha256($0) }
    for i in 0..<32 { digest[i] = d.byte(i) }
    problem = nil
  }

  public func matches(_ candidate: UnsafeRawBufferPointer) -> Bool {
    guard problem == nil else { return false }
    let c = SodiumDigester().sha256(candidate)
    var a = InlineArray<32, UInt8>(repeating: 0)
    for i in 0..<32 { a[i] = c.byte(i) }
    return withUnsafeBytes(of: a) { x in
      withUnsafeBytes(of: digest) { y in
        sg_secure_compare(x.baseAddress!.assumingMemoryBound(to: UInt8.self), y.baseAddress!.assumingMemoryBound(to: UInt8.self), 32) == 0
      }
    }
  }
}

import CLinux
import Glibc
import ScanConsole
import ScanCore

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
    switch readSecretFile(file, maxBytes: 4_096) {
    case .failure(let why):
      problem = why.description
    case .success(var bytes):
      while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
      guard bytes.count >= 8 else {
        problem = "\(file): the secret is shorter than 8 bytes"
        return
      }
      let d = bytes.withUnsafeBytes { SodiumDigester().sha256($0) }
      for i in 0..<32 { digest[i] = d.byte(i) }
      for i in bytes.indices { bytes[i] = 0 }
      problem = nil
    }
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

/// Reads a file that holds a secret, refusing it unless only its owner (root or the service
/// user) can read it. The error text names the file and the fix, never the contents.
public func readSecretFile(_ path: String, maxBytes: Int) -> Result<[UInt8], SecretFileError> {
  var st = stat()
  guard stat(path, &st) == 0 else { return .failure(SecretFileError("\(path): \(SystemError.describe(lastErrno()))")) }
  guard st.st_uid == 0 || st.st_uid == geteuid() else {
    return .failure(SecretFileError("\(path) must be owned by root or the service user"))
  }
  guard st.st_mode & 0o077 == 0 else {
    return .failure(SecretFileError("\(path) is readable by group or others (chmod 600 it)"))
  }
  guard let bytes = try? readWholeFile(path, maxBytes: maxBytes) else {
    return .failure(SecretFileError("\(path) cannot be read"))
  }
  return .success(bytes)
}

/// Why a secret file was refused.
public struct SecretFileError: Error, CustomStringConvertible, Sendable {
  public var description: String
  init(_ description: String) { self.description = description }
}

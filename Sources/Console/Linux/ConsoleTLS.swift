import CLinux
import CTLS
import Glibc
import ScanPlatform

/// The console's TLS server context (OpenSSL, through CTLS): the certificate chain from
/// `console.tls_cert_file`, the private key from `console.tls_key_file` (a secret file: owner
/// root or the service user, no group or other bits, checked on the opened descriptor before
/// it is read; the bytes are zeroed once OpenSSL has parsed them), and, with
/// `console.tls_client_ca_file`, client certificates required and verified against that CA.
/// TLS 1.2 minimum, forward-secret AEAD ciphers, no renegotiation, no session cache.
/// Every file is read here as every file from outside is (`readWholeFile`: opened without
/// blocking, a regular file within its bound) and handed to OpenSSL in memory: a FIFO at one of
/// these paths is refused by name, it never stalls startup or `check-config`.
public final class ConsoleTLS {
  let context: OpaquePointer
  /// Whether clients must present a certificate signed by the client CA.
  public let requiresClientCertificates: Bool

  /// PEM private keys are small; an RSA 4096 key is about 3.3 KB.
  public static let keyBytesMax = 16_384
  /// A certificate chain or a CA bundle in PEM (Debian's whole ca-certificates bundle is ~220 KB).
  public static let pemBytesMax = 1 << 20

  public init(certFile: String, keyFile: String, clientCAFile: String) throws(SystemError) {
    let chain: [UInt8]
    do { chain = try readWholeFile(certFile, maxBytes: Self.pemBytesMax) } catch {
      throw SystemError(errno: EINVAL, operation: "console.tls_cert_file \(error)")
    }
    var clientCAs: [UInt8] = []
    if !clientCAFile.isEmpty {
      do { clientCAs = try readWholeFile(clientCAFile, maxBytes: Self.pemBytesMax) } catch {
        throw SystemError(errno: EINVAL, operation: "console.tls_client_ca_file \(error)")
      }
      if clientCAs.isEmpty {
        throw SystemError(errno: EINVAL, operation: "console.tls_client_ca_file \(clientCAFile): empty: refused")
      }
    }
    var key: [UInt8]
    do { key = try SecretFile.read(keyFile, maxBytes: Self.keyBytesMax) } catch {
      throw SystemError(errno: EACCES, operation: "console.tls_key_file \(error)")
    }
    defer { key.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    var reason = [CChar](repeating: 0, count: 256)
    let made = key.withUnsafeBytes { k in
      chain.withUnsafeBytes { c in
        clientCAs.withUnsafeBytes { ca in
          sg_tls_context_new(c.baseAddress, c.count, k.baseAddress, k.count, ca.baseAddress, ca.count, &reason, reason.count)
        }
      }
    }
    guard let made else {
      let text = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      let key =
        text.hasPrefix("client CA")
        ? "console.tls_client_ca_file \(clientCAFile)"
        : text.hasPrefix("certificate")
          ? "console.tls_cert_file \(certFile)"
          : "console.tls_key_file \(keyFile)"
      throw SystemError(errno: EINVAL, operation: "\(key): \(text)")
    }
    context = made
    requiresClientCertificates = !clientCAFile.isEmpty
  }

  deinit { sg_tls_context_free(context) }

  /// The OpenSSL linked at run time ("OpenSSL 3.0.19 ...").
  public static var libraryVersion: String { String(cString: sg_tls_library_version()) }
}

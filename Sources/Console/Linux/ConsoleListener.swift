import CLinux
import CTLS
import Glibc
import ScanConsole
import ScanCore
import ScanPlatform

/// One `console.listen` entry and how it is served. The secure default: a listener on a
/// loopback address (127.0.0.0/8, ::1) speaks plain text; any other address (0.0.0.0, ::, a
/// LAN or link-local address) speaks TLS when `console.tls_cert_file` and `tls_key_file` are
/// set, plain text only with `console.allow_plaintext_remote = true`, and is refused otherwise.
/// "tls:ADDRESS" asks for TLS on any address, loopback included (a reader behind a local
/// proxy, and the tests).
public struct ConsoleListener: Equatable, Sendable, CustomStringConvertible {
  /// "host:port" or "[v6]:port", without the "tls:" prefix.
  public var address: String
  public var tls: Bool
  public var loopback: Bool
  /// "tls:0.0.0.0:4570" or "127.0.0.1:4570".
  public var description: String { tls ? "tls:" + address : address }

  public static let tlsPrefix = "tls:"

  public init(address: String, tls: Bool, loopback: Bool) {
    self.address = address
    self.tls = tls
    self.loopback = loopback
  }

  /// Whether `host`, an IPv4 or IPv6 literal (no brackets), is a loopback address:
  /// 127.0.0.0/8 or ::1. Nil when it is not an address. Everything else counts as remote,
  /// including the wildcards 0.0.0.0 and :: and IPv4-mapped addresses.
  public static func isLoopback(host: String) -> Bool? {
    var v4 = in_addr(), v6 = in6_addr()
    if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
    if inet_pton(AF_INET6, host, &v6) == 1 {
      return withUnsafeBytes(of: v6) { b in (0..<15).allSatisfy { b[$0] == 0 } && b[15] == 1 }
    }
    return nil
  }

  /// The listeners `settings` asks for, each with its transport; throws when one is refused
  /// (a plaintext listener that is not loopback, "tls:" without the files, a bad address).
  public static func plan(_ settings: ConsoleSettings) throws(SystemError) -> [ConsoleListener] {
    let tlsConfigured = !settings.tlsCertFile.isEmpty || !settings.tlsKeyFile.isEmpty
    if tlsConfigured && (settings.tlsCertFile.isEmpty || settings.tlsKeyFile.isEmpty) {
      throw SystemError(errno: EINVAL, operation: "console.tls_cert_file and console.tls_key_file: set both, or neither")
    }
    if !settings.tlsClientCAFile.isEmpty && !tlsConfigured {
      throw SystemError(errno: EINVAL, operation: "console.tls_client_ca_file needs console.tls_cert_file and console.tls_key_file")
    }
    var listeners: [ConsoleListener] = []
    for entry in settings.listen {
      let prefixed = entry.hasPrefix(tlsPrefix)
      let address = prefixed ? String(entry.dropFirst(tlsPrefix.count)) : entry
      guard let loopback = isLoopback(host: splitHostPort(address).host) else {
        throw SystemError(errno: EINVAL, operation: "console.listen \"\(entry)\": not an IPv4 or IPv6 address")
      }
      if prefixed && !tlsConfigured {
        throw SystemError(errno: EINVAL, operation: "console.listen \"\(entry)\": TLS needs console.tls_cert_file and console.tls_key_file")
      }
      let tls = prefixed || (!loopback && tlsConfigured)
      if !tls && !loopback && !settings.allowPlaintextRemote {
        throw SystemError(
          errno: EPERM,
          operation: "console.listen \"\(entry)\" is not loopback and would send the AUTH secret and every "
            + "reply in clear: set console.tls_cert_file and console.tls_key_file (TLS), or console.allow_plaintext_remote = true")
      }
      listeners.append(ConsoleListener(address: address, tls: tls, loopback: loopback))
    }
    return listeners
  }
}

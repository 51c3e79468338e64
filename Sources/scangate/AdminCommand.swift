import CHTTPD
import Glibc
import ScanCore
import ScanLinux
import ScanTools

/// `scangate admin`: the web admin page (its own process and unit, scangate-admin.service),
/// `admin fingerprint` (what a browser should see), `admin user ...` (the accounts).
enum AdminCommand {
  static func run(_ arguments: [String]) -> Int32 {
    if arguments.first == "user" { return AdminUsers.run(arguments) }
    do throws(ParseError) {
      let fingerprint = arguments.first == "fingerprint"
      let options = try Options(Array(arguments.dropFirst(fingerprint ? 1 : 0)), valued: ["config"], known: [])
      guard let config = loadConfig(options) else { return 1 }
      let certificate: [UInt8]
      do { certificate = try readWholeFile(config.admin.tlsCertFile, maxBytes: 64 * 1024) } catch {
        throw ParseError(message: "admin.tls_cert_file: \(error)")
      }
      if fingerprint {
        var out = [CChar](repeating: 0, count: 96)
        guard sg_http_certificate_fingerprint(String(decoding: certificate, as: UTF8.self), &out) == 0 else {
          throw ParseError(message: "\(config.admin.tlsCertFile): no PEM certificate")
        }
        print("SHA-256 " + String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        return 0
      }
      return try serve(config, certificate: certificate)
    } catch {
      writeStandardError("scangate admin: \(error)\n")
      return 2
    }
  }

  static func serve(_ config: ScanConfig, certificate: [UInt8]) throws(ParseError) -> Int32 {
    guard !config.admin.listen.isEmpty else { throw ParseError(message: "admin.listen is not set: the web page is off") }
    var issuer: GuestPassIssuer? = nil
    if !config.admin.issuerKeyFile.isEmpty {
      // An issuer's page (config refuses one beside a reader): guest passes only. The sheet's
      // times in the site's zone, set before any thread exists.
      guard SystemLocalCalendar.useTimeZone(config.door.timeZone) else { throw ParseError(message: "schedule.time_zone: not in tzdata") }
      issuer = try GuestPassIssuer(keyPath: config.admin.issuerKeyFile, kid: config.admin.issuerKid)
    } else if config.console.unixPath.isEmpty && config.admin.reader.address.isEmpty {
      throw ParseError(message: "admin.listen needs console.unix_path: the page drives the reader through its console")
    }
    let remote = try remoteReader(config.admin.reader)
    var key: [UInt8]
    do { key = try SecretFile.read(config.admin.tlsKeyFile, maxBytes: 64 * 1024) } catch {
      throw ParseError(message: "admin.tls_key_file: \(error)")
    }
    defer { SecretBytes.wipe(&key) }
    var token: String? = nil
    if !config.admin.metricsTokenFile.isEmpty {
      var bytes: [UInt8]
      do { bytes = try SecretFile.read(config.admin.metricsTokenFile, maxBytes: 4096) } catch {
        throw ParseError(message: "admin.metrics_token_file: \(error)")
      }
      defer { SecretBytes.wipe(&bytes) }
      while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
      guard (16...128).contains(bytes.count), bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
        throw ParseError(message: "admin.metrics_token_file: want 16 to 128 printable characters on one line")
      }
      token = String(decoding: bytes, as: UTF8.self)
    }
    let site = AdminSite(
      settings: .init(
        usersFile: config.admin.usersFile, consolePath: config.console.unixPath, idleMinutes: config.admin.sessionIdleMinutes,
        metricsToken: token, issuer: issuer, remote: remote))
    let server: HTTPServer
    do { server = try HTTPServer(listen: config.admin.listen, certificatePEM: certificate, keyPEM: key, handler: site) } catch {
      throw ParseError(message: "\(error)")
    }
    SecretBytes.wipe(&key)
    var drives = remote.map { "the reader's TLS console: \($0.address)" } ?? "the reader's console: \(config.console.unixPath)"
    if issuer != nil { drives = "an issuer's page: guest passes as \(config.admin.issuerKid)" + (remote == nil ? "" : "; " + drives) }
    writeStandardError("scangate admin: serving https://\(config.admin.listen)/ (\(drives))\n")
    // The page holds no state worth keeping: SIGTERM ends it where it stands.
    withExtendedLifetime(server) {
      while true { pause() }
    }
    return 0
  }

  /// `admin.reader`: the TLS context for a reader on another host (its CA, this page's client
  /// certificate and key) and its operator secret; nil when the reader is on this host.
  static func remoteReader(_ settings: AdminReaderSettings) throws(ParseError) -> AdminSite.RemoteReader? {
    guard !settings.address.isEmpty else { return nil }
    let context: ConsoleTLSClientContext
    do { context = try ConsoleTLSClientContext(caFile: settings.caFile, certFile: settings.certFile, keyFile: settings.keyFile) } catch {
      throw ParseError(message: "admin.reader: \(error)")
    }
    guard !settings.secretFile.isEmpty else { return AdminSite.RemoteReader(address: settings.address, context: context, secret: nil) }
    var bytes: [UInt8]
    do { bytes = try SecretFile.read(settings.secretFile, maxBytes: 4096) } catch { throw ParseError(message: "admin.reader_secret_file: \(error)") }
    defer { SecretBytes.wipe(&bytes) }
    while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
    guard bytes.count >= 8, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
      throw ParseError(message: "admin.reader_secret_file: the reader's operator secret, 8 or more printable characters on one line")
    }
    return AdminSite.RemoteReader(address: settings.address, context: context, secret: String(decoding: bytes, as: UTF8.self))
  }
}

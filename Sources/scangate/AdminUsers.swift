import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// The accounts of the web admin page (issue 42): `scangate admin user add NAME --role ROLE`,
/// `passwd NAME`, `remove NAME`, `list`. One file (`admin.users_file`, default
/// /etc/scangate/admin-users), mode 0600, a line per account: `name role hash`, the hash an
/// Argon2id string from libsodium's `crypto_pwhash_str` (64 MiB, 2 passes: a Pi 3 computes one
/// in under a second). Passwords are read on standard input, never from the command line; the
/// file is read whole and refused whole when any line is wrong, and written whole through the
/// durable-write helper.
enum AdminUsers {
  typealias Role = AdminAccounts.Role
  typealias Account = AdminAccounts.Account
  static var accountsMax: Int { AdminAccounts.accountsMax }
  static var passwordBytes: ClosedRange<Int> { AdminAccounts.passwordBytes }
  static func nameProblem(_ name: String) -> String? { AdminAccounts.nameProblem(name) }
  static func parse(_ text: String) throws(ParseError) -> [Account] { try AdminAccounts.parse(text) }
  static func text(_ accounts: [Account]) -> String { AdminAccounts.text(accounts) }

  /// The password on standard input (one line, 12 to 128 bytes, no control characters), hashed.
  static func readPasswordHash() throws(ParseError) -> String {
    var password = Array((readLine(strippingNewline: true) ?? "").utf8)
    defer { SecretBytes.wipe(&password) }
    guard passwordBytes.contains(password.count), password.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
      throw ParseError(message: "the password (standard input) must be \(passwordBytes.lowerBound) to \(passwordBytes.upperBound) bytes, no control characters")
    }
    return try AdminAccounts.hash(password)
  }

  /// `scangate admin user add|passwd|remove|list NAME [--role ROLE] [--users FILE | --config FILE]`.
  static func run(_ arguments: [String]) -> Int32 {
    do throws(ParseError) {
      guard arguments.first == "user", arguments.count >= 2 else {
        throw ParseError(message: "usage: admin user add|passwd|remove|list [NAME] [--role viewer|operator|admin] [--users FILE | --config FILE]")
      }
      let verb = arguments[1]
      let options = try Options(Array(arguments.dropFirst(2)), valued: ["role", "users", "config"], known: [])
      let path: String
      if let users = options.value("users") {
        path = users
      } else {
        guard let config = loadConfig(options) else { return 1 }
        path = config.admin.usersFile
      }
      var accounts: [Account] = []
      if fileExists(path) { accounts = try AdminAccounts.load(path) }
      if verb == "list" {
        for a in accounts { print("\(a.name) \(a.role.rawValue)") }
        return 0
      }
      guard let name = options.positionals.first, options.positionals.count == 1 else { throw ParseError(message: "\(verb): one NAME") }
      if let problem = nameProblem(name) { throw ParseError(message: "\(name): \(problem)") }
      let index = accounts.firstIndex { $0.name == name }
      switch verb {
      case "add":
        guard index == nil else { throw ParseError(message: "\(name) exists: admin user passwd \(name) changes the password") }
        guard let role = options.value("role").flatMap(Role.init(rawValue:)) else { throw ParseError(message: "add wants --role viewer|operator|admin") }
        accounts.append(Account(name: name, role: role, hash: try readPasswordHash()))
      case "passwd":
        guard let index else { throw ParseError(message: "no account \(name)") }
        accounts[index].hash = try readPasswordHash()
        if let role = options.value("role") {
          guard let r = Role(rawValue: role) else { throw ParseError(message: "--role viewer|operator|admin") }
          accounts[index].role = r
        }
      case "remove":
        guard let index else { throw ParseError(message: "no account \(name)") }
        accounts.remove(at: index)
      default:
        throw ParseError(message: "admin user \(verb): add, passwd, remove or list")
      }
      guard accounts.count <= accountsMax else { throw ParseError(message: "more than \(accountsMax) accounts") }
      do { try SecretFile.replace(path, Array(text(accounts).utf8)) } catch { throw ParseError(message: "\(error)") }
      // The page's own user reads it (scangate-admin.service); still 0600: nobody else.
      if getuid() == 0, let ids = AdminAccounts.serviceIDs {
        do { _ = try syscall("chown \(path)", { chown(path, ids.uid, ids.gid) }) } catch {
          throw ParseError(message: "\(error): the page (\(AdminAccounts.serviceUser)) cannot read it")
        }
      }
      writeStandardError("scangate admin: \(path): \(name) \(verb == "remove" ? "removed" : verb == "add" ? "added" : "changed")\n")
      return 0
    } catch {
      writeStandardError("scangate admin: \(error)\n")
      return 2
    }
  }
}

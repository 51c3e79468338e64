import CLinux
import Glibc
import ScanBase

/// Files that hold a secret (the console's operator secret, the audit log's chain key): one
/// rule for all of them. The file must be a regular file owned by root or by the user the
/// service runs as, with no group or other permission bits (mode 0600 or stricter); anything
/// else is refused with a reason a person can act on. Error messages name the file, never
/// its content.
public enum SecretFile {
  /// Secret files are small; anything larger is refused.
  public static let bytesMax = 4_096

  /// Why `st` (from `fstat` of the opened file) is not acceptable for a secret, or nil.
  /// `owner` is one more acceptable owner (root verifying a log accepts the key of the user
  /// that owns the log).
  public static func problem(_ st: stat, owner: uid_t? = nil) -> String? {
    if (st.st_mode & S_IFMT) != S_IFREG { return "not a regular file" }
    // root running a command on a packaged reader (`scangate allow-list enrol`, `console
    // --secret-file`) reads the secret the service keeps: the `scangate` account's is accepted.
    if st.st_uid != 0 && st.st_uid != geteuid() && st.st_uid != owner && st.st_uid != serviceAccount {
      return "must be owned by root or the service user (uid \(geteuid())), not uid \(st.st_uid)"
    }
    if st.st_mode & 0o077 != 0 { return "is readable by group or others (chmod 600 it)" }
    return nil
  }

  /// The packaged service's account (`scangate`), when this system has one: looked up once.
  static let serviceAccount: uid_t? = getpwnam("scangate").map { $0.pointee.pw_uid }

  /// Reads a secret file after checking owner and mode on the opened descriptor (no window
  /// between the check and the read). Trailing CR/LF are removed. The caller should
  /// `sg_memzero` the bytes once it has what it needs.
  public static func read(_ path: String, maxBytes: Int = bytesMax, owner: uid_t? = nil) throws(FileError) -> [UInt8] {
    // Opened without blocking (a FIFO at the path must not hang startup) and refused unless regular.
    let (fd, size) = try openRegularFile(path, maxBytes: maxBytes)
    defer { closeDescriptor(fd) }
    let st = try fileStatus(fd, path)
    if let problem = problem(st, owner: owner) { throw FileError(path: path, reason: problem) }
    var bytes = try readOpened(fd, upTo: size, path: path)
    while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
    return bytes
  }

  /// Creates `path` holding `bytes`, mode 0600, owned by the current user; fails if it exists
  /// (never overwrites a secret). The file appears whole or not at all: the durable write's
  /// first half at `path.new` (created anew, O_EXCL, never through a symlink), then linked into
  /// place and the directory synced.
  public static func create(_ path: String, _ bytes: [UInt8]) throws(FileError) {
    try stageFile(path, bytes, suffix: ".new", rule: .secret).createNew()
  }

  /// Replaces (or creates) `path` with `bytes` under the same rules as `create`: written whole
  /// at `path.next` (0600, O_EXCL), synced, renamed into place and the directory synced, so the
  /// new secret survives a power cut and the old one stays whole until the rename.
  public static func replace(_ path: String, _ bytes: [UInt8]) throws(FileError) {
    try stageFile(path, bytes, suffix: ".next", rule: .secret).replace()
  }
}

/// Files that are not keys but must not be public either: config.toml, the allow-list (its
/// `text:` entries are working passes), schedules, the trust file and the revocation list. The
/// package installs them 0640 root:scangate. `scangate check-config` warns (it does not refuse:
/// the service still starts) when one is looser: owned by anyone but root or the service user,
/// readable or writable by others, or open to a group other than root's or the service's, or
/// writable by any group but those.
public enum ProtectedFile {
  /// Who may own or share such a file: root, the user and group running this check, and the
  /// service account (`scangate`) when it exists.
  public struct Trusted: Sendable {
    public var users: Set<uid_t>
    public var groups: Set<gid_t>
    public init(users: Set<uid_t>, groups: Set<gid_t>) {
      self.users = users
      self.groups = groups
    }

    /// root, the caller, and the `scangate` account when this system has one.
    public static func current(serviceAccount: String = "scangate") -> Trusted {
      var t = Trusted(users: [0, geteuid()], groups: [0, getegid()])
      if let pw = getpwnam(serviceAccount) { t.users.insert(pw.pointee.pw_uid) }
      if let gr = getgrnam(serviceAccount) { t.groups.insert(gr.pointee.gr_gid) }
      return t
    }
  }

  /// Why `st` is looser than 0640 root:scangate allows, or nil.
  public static func problem(_ st: stat, trusted: Trusted) -> String? {
    let mode = st.st_mode & 0o7777
    let octal = "0" + String(mode, radix: 8)
    var problems: [String] = []
    if !trusted.users.contains(st.st_uid) { problems.append("owned by uid \(st.st_uid), not root or the service user") }
    if mode & 0o002 != 0 {
      problems.append("writable by everyone")
    } else if mode & 0o004 != 0 {
      problems.append("readable by everyone")
    }
    if trusted.groups.contains(st.st_gid) {
      // root's or the service's group may read (0640); writing is the owner's.
    } else if mode & 0o060 != 0 {
      problems.append("open to group \(st.st_gid), not root's or the service's")
    }
    guard !problems.isEmpty else { return nil }
    return problems.joined(separator: ", ") + " (mode \(octal)): chmod 0640 and chown root:scangate"
  }

  /// Stats `path` (following links, as the service opens it) and says what is too loose; nil
  /// when it is fine or does not exist (a missing file is reported where it is loaded).
  public static func check(_ path: String, trusted: Trusted = .current()) -> String? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    guard (st.st_mode & S_IFMT) == S_IFREG else { return "not a regular file" }
    return problem(st, trusted: trusted)
  }
}

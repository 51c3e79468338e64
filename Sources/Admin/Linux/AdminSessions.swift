import CLinux
import ScanCore
import ScanPlatform
import Synchronization

/// The web page's signed-in sessions and its sign-in limits, in memory (a restart signs everyone
/// out). A session is a random 256-bit token in a cookie (`Secure; HttpOnly; SameSite=Strict`),
/// with its own random CSRF token that every state change must carry; it ends after
/// `idleSeconds` unused or 12 hours in all. Sign-in failures are counted per client address
/// and per account name: from the fifth, each try waits 2^(n-4) s (at most 15 minutes) before
/// the password is even checked. At most 64 sessions and 256 counters (the oldest go first).
public final class AdminSessions: Sendable {
  public struct Session: Sendable {
    public var name: String
    public var role: AdminAccounts.Role
    public var csrf: String
    var created: Int64
    var used: Int64
  }

  struct Failures {
    var count = 0
    var until: Int64 = 0
    var last: Int64 = 0
  }

  struct State {
    var sessions: [String: Session] = [:]
    var failures: [String: Failures] = [:]
  }

  private let state = Mutex(State())
  let idleSeconds: Int64
  static let lifetimeSeconds: Int64 = 12 * 3600
  static let sessionsMax = 64
  static let failureKeysMax = 256
  static let freeTries = 4
  static let backoffMaxSeconds: Int64 = 15 * 60

  public init(idleMinutes: Int) { idleSeconds = Int64(idleMinutes) * 60 }

  /// 32 random bytes as 64 hex digits.
  static func token() -> String {
    var raw = [UInt8](repeating: 0, count: 32)
    sg_random_bytes(&raw, raw.count)
    return AdminHex.hex(raw)
  }

  /// A new session for `account`; its token.
  public func open(_ account: AdminAccounts.Account, now: Int64) -> (token: String, session: Session) {
    let token = Self.token()
    let session = Session(name: account.name, role: account.role, csrf: Self.token(), created: now, used: now)
    state.withLock { s in
      s.sessions = s.sessions.filter { !expired($0.value, now: now) }
      if s.sessions.count >= Self.sessionsMax, let oldest = s.sessions.min(by: { $0.value.used < $1.value.used }) {
        s.sessions[oldest.key] = nil
      }
      s.sessions[token] = session
    }
    return (token, session)
  }

  /// The live session of `token` (its use now noted), or nil.
  public func session(_ token: String?, now: Int64) -> Session? {
    guard let token, token.utf8.count == 64 else { return nil }
    return state.withLock { s in
      guard var session = s.sessions[token] else { return nil }
      if expired(session, now: now) {
        s.sessions[token] = nil
        return nil
      }
      session.used = now
      s.sessions[token] = session
      return session
    }
  }

  public func close(_ token: String?) {
    guard let token else { return }
    _ = state.withLock { $0.sessions.removeValue(forKey: token) }
  }

  /// Every session of `name` ends (its password changed or it was removed).
  public func closeAll(of name: String) { state.withLock { $0.sessions = $0.sessions.filter { $0.value.name != name } } }

  private func expired(_ s: Session, now: Int64) -> Bool {
    now - s.used >= idleSeconds || now - s.created >= Self.lifetimeSeconds || now < s.created
  }

  // MARK: - Sign-in limits

  /// Seconds until `client` and `name` may try again (0: now).
  public func waitBeforeTry(client: String, name: String, now: Int64) -> Int64 {
    state.withLock { s in
      let a = s.failures["c " + client]?.until ?? 0, b = s.failures["a " + name]?.until ?? 0
      return max(0, max(a, b) - now)
    }
  }

  /// Counts a failed sign-in against both keys.
  public func failed(client: String, name: String, now: Int64) {
    state.withLock { s in
      for key in ["c " + client, "a " + name] {
        var f = s.failures[key] ?? Failures()
        f.count += 1
        f.last = now
        // Whole seconds: 2 s at the least, so that the wait is never under a second.
        if f.count > Self.freeTries { f.until = now + min(Self.backoffMaxSeconds, Int64(1) << min(20, f.count - Self.freeTries)) }
        s.failures[key] = f
      }
      while s.failures.count > Self.failureKeysMax, let oldest = s.failures.min(by: { $0.value.last < $1.value.last }) {
        s.failures[oldest.key] = nil
      }
    }
  }

  /// A sign-in that succeeded clears the account's count and the client's.
  public func succeeded(client: String, name: String) {
    state.withLock { s in
      s.failures["c " + client] = nil
      s.failures["a " + name] = nil
    }
  }
}

/// Lowercase hex of bytes.
enum AdminHex {
  static func hex(_ bytes: [UInt8]) -> String {
    String(decoding: bytes.flatMap { [Hex.digit($0 >> 4), Hex.digit($0)] }, as: UTF8.self)
  }
}

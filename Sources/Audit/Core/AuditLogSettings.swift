import ScanBase

/// The audit log's settings (`[log]` in config.toml); the defaults are the schema's.
public struct AuditLogSettings: Equatable, Sendable {
  public var path: String
  public var commitIntervalMilliseconds = 200
  public var retainRecords: Int64 = 1_000_000
  public var retainDays = 365
  /// Prune the oldest records while the records take more than this many bytes of the file.
  public var retainBytes: Int64 = 512 << 20
  public var rawPayloads = false
  /// The chain key's secret file; empty: `<path>.key`.
  public var chainKeyFile = ""
  public init(path: String) { self.path = path }
}

extension AuditLogSettings: ConfigSection {
  fileprivate typealias Key = ConfigKey<AuditLogSettings>

  /// `[log]`'s keys.
  package static let configKeys: [ConfigKey<AuditLogSettings>] = [
    Key(name: "log.path", kind: .string) { $0.path = $1.asString },
    Key(name: "log.commit_interval_ms", kind: .integer(10...10_000)) { $0.commitIntervalMilliseconds = $1.asInt },
    Key(name: "log.retain_records", kind: .integer(1_000...100_000_000)) { $0.retainRecords = Int64($1.asInt) },
    Key(name: "log.retain_days", kind: .integer(1...3_650)) { $0.retainDays = $1.asInt },
    Key(name: "log.raw_payloads", kind: .boolean) { $0.rawPayloads = $1.asBool },
    Key(name: "log.retain_bytes", kind: .integer(1_048_576...1_099_511_627_776)) { $0.retainBytes = Int64($1.asInt) },
    Key(name: "log.chain_key_file", kind: .string) { $0.chainKeyFile = $1.asString },
  ]
}

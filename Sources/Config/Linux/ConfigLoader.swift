import CToml
import ScanCore
import ScanPlatform

/// Reads config.toml through toml++ and validates it against `ConfigSchema`.
public enum ConfigLoader {
  /// Parses TOML text into flat entries (arrays gathered into lists).
  public static func entries(fromTOML text: [UInt8]) throws(ConfigErrors) -> [ConfigEntry] {
    var message = [CChar](repeating: 0, count: 512)
    var line: UInt32 = 0, column: UInt32 = 0
    var nulTerminated = text
    nulTerminated.append(0)
    let document = nulTerminated.withUnsafeBufferPointer { b in
      b.withMemoryRebound(to: CChar.self) {
        sg_toml_parse($0.baseAddress!, text.count, &message, message.count, &line, &column)
      }
    }
    guard let document else {
      let reason = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
      throw ConfigErrors(errors: [ConfigError(key: "(syntax)", line: Int(line), reason: "\(reason) (column \(column))")])
    }
    defer { sg_toml_free(document) }
    var out: [ConfigEntry] = []
    for i in 0..<sg_toml_count(document) {
      let e = sg_toml_entry_at(document, i)!.pointee
      let key = String(cString: e.key)
      let value: ConfigValue
      switch e.type {
      case Int32(SG_TOML_STRING): value = .string(String(cString: e.text))
      case Int32(SG_TOML_INTEGER): value = .integer(e.integer)
      case Int32(SG_TOML_FLOAT): value = .real(e.real)
      case Int32(SG_TOML_BOOLEAN): value = .boolean(e.boolean != 0)
      default: value = .string(String(cString: e.text))
      }
      if e.index == -2 {
        out.append(ConfigEntry(key: key, value: .list([]), line: Int(e.line)))
      } else if e.index >= 0 {
        if e.index > 0, let last = out.last, last.key == key, case .list(var items) = last.value {
          items.append(value)
          out[out.count - 1].value = .list(items)
        } else {
          out.append(ConfigEntry(key: key, value: .list([value]), line: Int(e.line)))
        }
      } else {
        out.append(ConfigEntry(key: key, value: value, line: Int(e.line)))
      }
    }
    return out
  }

  /// Loads and validates a configuration file.
  public static func load(path: String) throws(ConfigErrors) -> ScanConfig {
    let text: [UInt8]
    do { text = try readWholeFile(path, maxBytes: 1 << 20) } catch {
      throw ConfigErrors(errors: [ConfigError(key: path, line: 0, reason: error.reason)])
    }
    switch ConfigSchema.build(try entries(fromTOML: text)) {
    case .success(let config): return config
    case .failure(let errors): throw errors
    }
  }
}

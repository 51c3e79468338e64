import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// The config.toml the package ships documents every key the reader reads, each in its own
/// section, each once (a key missing there is a setting nobody can find). A key whose default is
/// "not set" is documented commented out (`# trust_file = "..."`): that counts.
@Suite struct ShippedConfigTests {
  @Test("config.toml names every key of the schema, under its section, once")
  func everyKeyDocumented() throws {
    let text = String(decoding: try readWholeFile(packageRoot + "/config.toml", maxBytes: 1 << 20), as: UTF8.self)
    var section = ""
    var present: [String: Int] = [:]
    for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
      let line = raw.trimmingPrefix(while: { $0 == " " })
      if line.hasPrefix("[") {
        section = String(line.dropFirst().prefix { $0 != "]" })
      } else {
        let body = line.hasPrefix("# ") ? line.dropFirst(2) : line
        guard let eq = body.firstIndex(of: "=") else { continue }
        let name = body[..<eq].trimmingCharacters(in: " ")
        guard !name.isEmpty, name.allSatisfy({ $0 == "_" || ("a"..."z").contains($0) || ("0"..."9").contains($0) }) else { continue }
        present[section + "." + name, default: 0] += 1
      }
    }
    var missing: [String] = []
    for key in ConfigSchema.keyNames where present[key] == nil { missing.append(key) }
    #expect(missing.isEmpty, "not in config.toml: \(missing)")
    let twice = present.filter { $0.value > 1 }.map(\.key)
    #expect(twice.isEmpty, "twice: \(twice)")
  }
}

extension Substring {
  fileprivate func trimmingCharacters(in set: Character) -> String {
    String(self.drop { $0 == set }.reversed().drop { $0 == set }.reversed())
  }
}

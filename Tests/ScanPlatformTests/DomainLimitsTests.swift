import ScanLinux
import ScanTestSupport
import Testing

/// Issue 44's limits, read from Package.swift and the sources as a reviewer would: a domain's
/// adapter (Sources/<Domain>/Linux, and Access/Sheet) depends on its own core, the platform
/// (ScanPlatform) and C shims, not on another domain's adapter; the platform depends on no
/// domain's adapter. Today's exceptions are listed with their reason: one that appears is a new
/// cross-domain arrow, one that goes away is an entry to delete. Both fail.
@Suite struct DomainLimitsTests {
  /// (adapter, the other adapter it depends on): why, until it moves.
  static let exceptions: [String: String] = [
    "ScanAccessLinux>ScanConfigLinux": "credential files name their TOML section's paths (CredentialFiles)",
    "ScanAccessSheet>ScanReaderLinux": "the sheet's PNG goes through the reader's image writer",
    "ScanFleetLinux>ScanAuditLinux": "the link publishes the audit log's records (FleetLink)",
    "ScanFleetLinux>ScanAccessLinux": "bundles and site uses write credential state (FleetControl, SiteUses)",
    "ScanFleetLinux>ScanReaderLinux": "snapshots for the fleet (FleetEnvelope, SiteChannel)",
    "ScanTurnstileLinux>ScanFleetLinux": "site-wide anti-passback over the fleet link (TurnstileController)",
    "ScanKeypadLinux>ScanAccessLinux": "the PIN's MAC key file (KeypadController)",
    "ScanAdminLinux>ScanConsoleLinux": "the page talks to its reader through the console client",
  ]

  struct Target {
    let name: String
    let dependencies: [String]
    let path: String
  }

  /// Every `.target(...)` in Package.swift with its name, dependencies and path.
  static func targets() -> [Target] {
    let text = readText(packageRoot + "/Package.swift")
    var out: [Target] = []
    for chunk in text.split(separator: ".target(").dropFirst() {
      let body = chunk.split(separator: "swiftSettings").first ?? chunk
      guard let name = quoted(after: "name: ", in: body) else { continue }
      var deps: [String] = []
      if let open = body.firstRange(of: "dependencies: ["), let close = body[open.upperBound...].firstIndex(of: "]") {
        deps = body[open.upperBound..<close].split(separator: ",").compactMap { part in
          let t = String(part.filter { $0 != " " && $0 != "\n" && $0 != "\"" })
          return t.isEmpty ? nil : t
        }
      }
      out.append(Target(name: name, dependencies: deps, path: quoted(after: "path: ", in: body) ?? "Sources/" + name))
    }
    return out
  }

  static func readText(_ path: String) -> String {
    String(decoding: (try? readWholeFile(path, maxBytes: 1 << 20)) ?? [], as: UTF8.self)
  }

  static func quoted(after label: String, in text: Substring) -> String? {
    guard let r = text.firstRange(of: label + "\"") else { return nil }
    return String(text[r.upperBound...].prefix { $0 != "\"" })
  }

  static func isAdapter(_ t: Target) -> Bool {
    t.path.hasSuffix("/Linux") || t.path == "Sources/Access/Sheet"
  }

  @Test("no domain's adapter depends on another's, beyond the listed exceptions; the platform on none")
  func adaptersStayInTheirDomain() {
    let all = Self.targets()
    let adapters = Set(all.filter(Self.isAdapter).map(\.name))
    #expect(adapters.count >= 14 && adapters.contains("ScanFeedbackLinux"), "\(adapters.sorted())")
    var found: Set<String> = []
    for t in all where Self.isAdapter(t) {
      for d in t.dependencies where adapters.contains(d) { found.insert("\(t.name)>\(d)") }
    }
    #expect(found.subtracting(Self.exceptions.keys).sorted() == [], "new cross-domain arrows")
    #expect(Set(Self.exceptions.keys).subtracting(found).sorted() == [], "gone: delete the exception")
    let platform = all.first { $0.name == "ScanPlatform" }
    #expect(platform != nil && platform!.dependencies.allSatisfy { !adapters.contains($0) })
  }

  @Test("an adapter's sources import only the adapters its target may (SwiftPM would let a transitive one through)")
  func importsFollowThePackage() throws {
    let all = Self.targets()
    let adapters = Set(all.filter(Self.isAdapter).map(\.name))
    var stray: [String] = []
    for t in all where Self.isAdapter(t) {
      for file in ChokepointTests.swiftFiles(under: packageRoot + "/" + t.path) {
        for line in Self.readText(packageRoot + "/" + t.path + "/" + file).split(separator: "\n") where line.hasPrefix("import ") {
          let module = String(line.dropFirst(7))
          if adapters.contains(module) && module != t.name && !t.dependencies.contains(module) { stray.append("\(file): \(module)") }
        }
      }
    }
    #expect(stray == [])
  }

  @Test("the platform knows no domain: it depends on ScanBase and C shims only, and no file of it imports another Swift module of ours")
  func platformIsAPlatform() throws {
    let platform = try #require(Self.targets().first { $0.name == "ScanPlatform" })
    #expect(platform.dependencies.filter { $0.hasPrefix("Scan") } == ["ScanBase"], "\(platform.dependencies)")
    var stray: [String] = []
    for file in ChokepointTests.swiftFiles(under: packageRoot + "/" + platform.path) {
      for line in Self.readText(packageRoot + "/" + platform.path + "/" + file).split(separator: "\n") where line.hasPrefix("import Scan") {
        if line != "import ScanBase" { stray.append("\(file): \(line)") }
      }
    }
    #expect(stray == [], "a platform file imports a domain's module")
  }

  @Test("folder name = module name = test target name: Sources/<D>/Core is Scan<D>, <D>/Linux Scan<D>Linux, <D>/<P> Scan<D><P>, <N> Scan<N>")
  func folderIsModule() {
    let targets = Self.targets()
    #expect(targets.count >= 40, "\(targets.count) targets read")
    var misnamed: [String] = []
    for t in targets where !t.name.hasPrefix("C") {
      let parts = t.path.split(separator: "/").map(String.init)
      guard parts.first == "Sources" else { continue }
      let expected: String
      switch parts.count {
      case 2: expected = parts[1].hasPrefix("Scan") || parts[1].hasPrefix("scangate") ? parts[1] : "Scan" + parts[1]
      case 3: expected = "Scan" + parts[1] + (parts[2] == "Core" ? "" : parts[2])
      default: expected = "(no deeper than Sources/<Domain>/<Part>)"
      }
      if t.name != expected { misnamed.append("\(t.path): \(t.name), not \(expected)") }
    }
    #expect(misnamed == [])
    // Each test target tests the module it is named after (support, shims and the allocation run aside).
    let text = Self.readText(packageRoot + "/Package.swift")
    let modules = Set(targets.map(\.name))
    var tests: [String] = []
    for call in ["coreTests(\"", "adapterTests(\"", ".testTarget(\n      name: \""] {
      for chunk in text.split(separator: call).dropFirst() { tests.append(String(chunk.prefix { $0 != "\"" })) }
    }
    #expect(tests.count >= 25, "\(tests)")
    let strays = tests.filter { $0 != "HotPathAllocationTests" && !($0.hasSuffix("Tests") && modules.contains(String($0.dropLast(5)))) }
    #expect(strays == [], "test targets named for no module")
    let folders = Set((try? listDirectory(packageRoot + "/Tests")) ?? [])
    #expect(Set(tests).subtracting(folders).sorted() == [], "a test target's folder is Tests/<its name>")
  }

  @Test("the feedback domain is built the new way: its adapter names its own core, the platform, the loop and the console's STATUS type, nothing else")
  func feedbackIsSelfContained() throws {
    let t = try #require(Self.targets().first { $0.name == "ScanFeedbackLinux" })
    #expect(t.dependencies.sorted() == ["ScanBase", "ScanConsole", "ScanFeedback", "ScanLoop", "ScanPlatform"])
    let core = try #require(Self.targets().first { $0.name == "ScanFeedback" })
    #expect(core.dependencies == ["ScanBase"])
  }

  @Test("the feedback domain plugs in by one value: outside its folder, one line each in ScanConfig, the schema's list and the composition root")
  func feedbackPlugsInByOneLine() {
    // Its names in code (comments and imports aside): its types, its module and its section.
    let names = /\bFeedback(Settings|Lights|Lamps|Domain|Idle|Levels)\b|\bScanFeedback\b|config\.feedback\b|\\\.feedback\b/
    // The umbrellas re-export every module, and the simulator's world models the lamps' core.
    let aside = ["ScanCore/ScanCore.swift", "ScanLinux/Exports.swift"]
    var found: [String] = []
    for file in ChokepointTests.swiftFiles(under: packageRoot + "/Sources")
    where !file.hasPrefix("Feedback/") && !file.hasPrefix("Simulator/") && !aside.contains(file) {
      for line in Self.readText(packageRoot + "/Sources/" + file).split(separator: "\n") {
        let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false)[0].trimmingPrefix(while: { $0 == " " })
        if !code.hasPrefix("import "), code.firstMatch(of: names) != nil { found.append("\(file): \(code)") }
      }
    }
    #expect(
      found.sorted() == [
        "Config/Core/Config.swift: public var feedback = FeedbackSettings()",
        "Config/Core/ConfigSchema.swift: DomainSection(\\.feedback),",
        "Service/Wiring/Service+Serve.swift: try FeedbackDomain.attach(config.feedback, start, to: &loop)",
      ], "\(found)")
  }
}

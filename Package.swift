// swift-tools-version:6.0
// ScanGate: a fixed-memory camera → barcode → allow-list → relay service for single-board computers.
import Foundation
import PackageDescription

/// libcamera (CSI camera modules) is built in when its headers are here, unless
/// SCANGATE_LIBCAMERA=0; without it the CCamera shim is a stub and V4L2 works as before.
let withLibcamera =
  ProcessInfo.processInfo.environment["SCANGATE_LIBCAMERA"] != "0"
  && FileManager.default.fileExists(atPath: "/usr/include/libcamera/libcamera/libcamera.h")

/// Settings every Swift target shares: Swift 6 mode, strict about what it imports.
let swiftSettings: [SwiftSetting] = [
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("MemberImportVisibility"),
]

/// A pure test target for one domain's core (Tests/<name>), on ScanSim's fakes.
func coreTests(_ name: String, _ cores: [Target.Dependency]) -> Target {
  .testTarget(name: name, dependencies: cores + ["ScanSim"], swiftSettings: swiftSettings)
}

/// A test target for a domain's adapter (Tests/<name>): the product's modules and ScanTestSupport.
func adapterTests(_ name: String) -> Target {
  .testTarget(
    name: name, dependencies: ["ScanCore", "ScanConsole", "ScanSim", "ScanLinux", "ScanService", "ScanTestSupport"],
    swiftSettings: swiftSettings)
}

let package = Package(
  name: "ScanGate",
  products: [
    .executable(name: "scangate", targets: ["scangate"]),
    .executable(name: "scangate-sim", targets: ["scangate-sim"]),
    .library(name: "ScanCore", targets: ["ScanCore"]),
    .library(name: "ScanSim", targets: ["ScanSim"]),
  ],
  targets: [
    // Sources/ is one folder per domain. In each, Core/ is pure Swift (it imports no C) and
    // Linux/ is its adapter, a target of its own (ScanDoorLinux, ScanFleetLinux, …; Base's is
    // ScanPlatform), beside the domain's C shims (one C library each); ScanLinux is the umbrella
    // that re-exports the adapters. Service/Loop is the run loop. The cores, lowest first: each
    // arrow below is a dependency the compiler enforces.

    // MARK: Pure Swift (imports no C): the domains' cores.
    // Base: clocks and seams, lines, events and their ring, codecs, limits, the config schema's machinery.
    .target(name: "ScanBase", path: "Sources/Base/Core", swiftSettings: swiftSettings),
    // Access: the allow-list, signed passes, schedules, card numbers, the decision seam.
    .target(name: "ScanAccess", dependencies: ["ScanBase"], path: "Sources/Access/Core", swiftSettings: swiftSettings),
    // Door: the door's state machine (contact, exit button, tamper, alarms) and [door].
    .target(name: "ScanDoor", dependencies: ["ScanBase"], path: "Sources/Door/Core", swiftSettings: swiftSettings),
    // Turnstile: one passage per grant (per direction), anti-passback, occupancy, and [turnstile].
    .target(name: "ScanTurnstile", dependencies: ["ScanBase"], path: "Sources/Turnstile/Core", swiftSettings: swiftSettings),
    // Emergency: the fire panel's release and the latched lockdown, and [emergency].
    .target(name: "ScanEmergency", dependencies: ["ScanBase"], path: "Sources/Emergency/Core", swiftSettings: swiftSettings),
    // Keypad: a PIN as a second factor after the pass (keys, entry, attempts) and [keypad].
    .target(name: "ScanKeypad", dependencies: ["ScanBase"], path: "Sources/Keypad/Core", swiftSettings: swiftSettings),
    // Audit: the audit log's record and [log].
    .target(name: "ScanAudit", dependencies: ["ScanBase"], path: "Sources/Audit/Core", swiftSettings: swiftSettings),
    // Reader: the engine, the decode pipeline and strategy, presence, the actuator, camera and
    // decoder-worker supervision, snapshots (one module: the frame path stays generic inside it).
    .target(name: "ScanReader", dependencies: ["ScanBase", "ScanAccess"], path: "Sources/Reader/Core", swiftSettings: swiftSettings),
    // Panels: OSDP (framer, peripheral, Secure Channel), Wiegand's settings, and [panel].
    .target(name: "ScanPanels", dependencies: ["ScanBase", "ScanAccess"], path: "Sources/Panels/Core", swiftSettings: swiftSettings),
    // Fleet: MQTT messages, signed bundles and commands, Home Assistant discovery, and [fleet].
    .target(name: "ScanFleet", dependencies: ["ScanBase", "ScanAudit"], path: "Sources/Fleet/Core", swiftSettings: swiftSettings),
    // Feedback: the lamps that tell the person at the reader what it is doing, and [feedback].
    .target(name: "ScanFeedback", dependencies: ["ScanBase"], path: "Sources/Feedback/Core", swiftSettings: swiftSettings),
    // Config: `ScanConfig`, the whole configuration, composed from every domain's section (on top).
    .target(
      name: "ScanConfig",
      dependencies: [
        "ScanBase", "ScanAccess", "ScanDoor", "ScanTurnstile", "ScanEmergency", "ScanKeypad", "ScanAudit", "ScanReader",
        "ScanPanels", "ScanFleet", "ScanFeedback",
      ],
      path: "Sources/Config/Core", swiftSettings: swiftSettings),
    // ScanCore: every core above, re-exported (`import ScanCore` is the whole pure product).
    .target(
      name: "ScanCore",
      dependencies: [
        "ScanBase", "ScanAccess", "ScanDoor", "ScanTurnstile", "ScanEmergency", "ScanKeypad", "ScanAudit", "ScanReader",
        "ScanPanels", "ScanFleet", "ScanFeedback", "ScanConfig",
      ],
      path: "Sources/ScanCore", swiftSettings: swiftSettings),
    // Console: the line protocol (framer, commands, sessions, AUTH) for serial and TCP.
    .target(name: "ScanConsole", dependencies: ["ScanCore"], path: "Sources/Console/Core", swiftSettings: swiftSettings),
    // Sim: fakes (frame source, output lines, manual clock) shared by the demo and the tests.
    .target(name: "ScanSim", dependencies: ["ScanCore"], swiftSettings: swiftSettings),

    // MARK: Thin C/C++ bindings (one library each), in the domain that uses them.
    .target(
      name: "CZXing", path: "Sources/Reader/CZXing",
      cxxSettings: [.unsafeFlags(["-I/usr/include/ZXing", "-std=c++17", "-O2"])],
      linkerSettings: [.linkedLibrary("ZXing"), .linkedLibrary("stdc++")]),
    .target(
      name: "CImageIO", path: "Sources/Reader/CImageIO",
      cSettings: [.unsafeFlags(["-I/usr/include/stb", "-O2"])],
      linkerSettings: [
        .linkedLibrary("turbojpeg"), .linkedLibrary("jpeg"), .linkedLibrary("qrencode"), .linkedLibrary("m"),
      ]),
    .target(name: "CV4L2", path: "Sources/Reader/CV4L2", linkerSettings: [.linkedLibrary("v4l2")]),
    .target(
      name: "CCamera", path: "Sources/Reader/CCamera",
      cxxSettings: [.unsafeFlags(["-I/usr/include/libcamera", "-O2"])]
        + (withLibcamera ? [.define("SG_WITH_LIBCAMERA")] : []),
      linkerSettings: (withLibcamera ? [.linkedLibrary("camera"), .linkedLibrary("camera-base")] : [])
        + [.linkedLibrary("stdc++")]),
    .target(name: "CSandbox", path: "Sources/Reader/CSandbox", linkerSettings: [.linkedLibrary("seccomp")]),
    .target(name: "CGPIOD", path: "Sources/Door/CGPIOD", linkerSettings: [.linkedLibrary("gpiod")]),
    .target(
      name: "CEvdev", path: "Sources/Keypad/CEvdev",
      cSettings: [.unsafeFlags(["-I/usr/include/libevdev-1.0"])],
      linkerSettings: [.linkedLibrary("evdev")]),
    .target(name: "CLinux", path: "Sources/Base/CLinux", linkerSettings: [.linkedLibrary("sodium")]),
    .target(name: "CTLS", path: "Sources/Base/CTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
    .target(name: "CSQLite", path: "Sources/Audit/CSQLite", linkerSettings: [.linkedLibrary("sqlite3")]),
    .target(name: "CMosquitto", path: "Sources/Fleet/CMosquitto", linkerSettings: [.linkedLibrary("mosquitto")]),
    .target(name: "CHTTPD", path: "Sources/Admin/CHTTPD", linkerSettings: [.linkedLibrary("microhttpd"), .linkedLibrary("gnutls")]),
    .target(
      name: "CCredential", path: "Sources/Access/CCredential",
      linkerSettings: [.linkedLibrary("cbor"), .linkedLibrary("nettle"), .linkedLibrary("sodium")]),
    .target(name: "CSheet", path: "Sources/Access/CSheet", linkerSettings: [.linkedLibrary("cairo"), .linkedLibrary("m")]),
    .target(
      name: "CToml", path: "Sources/Config/CToml",
      cxxSettings: [.define("TOML_HEADER_ONLY", to: "0"), .define("TOML_SHARED_LIB", to: "1")],
      linkerSettings: [.linkedLibrary("tomlplusplus"), .linkedLibrary("stdc++")]),

    // MARK: The adapters: each domain's Linux side, beside its core; the only Swift targets that
    // import C. Each depends on the pure cores, the platform (Sources/Platform: the errno chokepoint,
    // files, the poll set, threads, clocks, GPIO lines; it knows no domain), the loop's module
    // (Loop: participants and their requests) and its own C libraries. The arrows between adapters
    // are these and no others (DomainLimitsTests holds them, docs/architecture.md draws them):
    // access reads its TOML through config's; the fleet publishes the audit log, checks bundles
    // with access's crypto and renders snapshots with the reader's decoder; the turnstile hears the
    // site's passages from the fleet; the keypad checks PINs with access's MAC; the printable sheet
    // draws the reader's QR encoding; the web page talks to its reader through the console client.
    .target(name: "ScanPlatform", dependencies: ["ScanBase", "CLinux", "CGPIOD"], path: "Sources/Platform", swiftSettings: swiftSettings),
    // The loop's module: what a participant is (PollParticipant), what it may ask of the loop
    // (LoopRequests), the operator's commands it may carry out, and the loop's own participants
    // (signals, the allow-list's watch, the state files' watch) and event printer.
    .target(
      name: "ScanLoop", dependencies: ["ScanCore", "ScanConsole", "ScanPlatform", "CLinux"], path: "Sources/Loop", swiftSettings: swiftSettings),
    .target(name: "ScanConfigLinux", dependencies: ["ScanCore", "ScanPlatform", "CToml"], path: "Sources/Config/Linux", swiftSettings: swiftSettings),
    .target(
      name: "ScanAuditLinux", dependencies: ["ScanCore", "ScanConsole", "ScanPlatform", "CLinux", "CSQLite"], path: "Sources/Audit/Linux",
      swiftSettings: swiftSettings),
    .target(
      name: "ScanAccessLinux", dependencies: ["ScanCore", "ScanConsole", "ScanPlatform", "ScanLoop", "ScanConfigLinux", "CLinux", "CCredential"],
      path: "Sources/Access/Linux", swiftSettings: swiftSettings),
    .target(
      name: "ScanReaderLinux",
      dependencies: ["ScanCore", "ScanPlatform", "ScanLoop", "CLinux", "CZXing", "CImageIO", "CV4L2", "CCamera", "CSandbox", "CGPIOD"],
      path: "Sources/Reader/Linux", swiftSettings: swiftSettings),
    .target(
      name: "ScanAccessSheet", dependencies: ["ScanCore", "ScanPlatform", "ScanReaderLinux", "CSheet"], path: "Sources/Access/Sheet",
      swiftSettings: swiftSettings),
    .target(
      name: "ScanDoorLinux", dependencies: ["ScanCore", "ScanConsole", "ScanPlatform", "ScanLoop", "CLinux", "CGPIOD"], path: "Sources/Door/Linux",
      swiftSettings: swiftSettings),
    .target(
      name: "ScanPanelsLinux", dependencies: ["ScanCore", "ScanPlatform", "ScanLoop", "CLinux", "CGPIOD", "CTLS"],
      path: "Sources/Panels/Linux", swiftSettings: swiftSettings),
    .target(
      name: "ScanConsoleLinux", dependencies: ["ScanCore", "ScanConsole", "ScanPlatform", "CLinux", "CTLS"], path: "Sources/Console/Linux",
      swiftSettings: swiftSettings),
    .target(
      name: "ScanFleetLinux",
      dependencies: ["ScanCore", "ScanConsole", "ScanPlatform", "ScanLoop", "ScanAuditLinux", "ScanAccessLinux", "ScanReaderLinux", "CLinux", "CMosquitto"],
      path: "Sources/Fleet/Linux", swiftSettings: swiftSettings),
    .target(
      name: "ScanTurnstileLinux", dependencies: ["ScanCore", "ScanConsole", "ScanPlatform", "ScanLoop", "ScanFleetLinux"],
      path: "Sources/Turnstile/Linux", swiftSettings: swiftSettings),
    .target(
      name: "ScanEmergencyLinux", dependencies: ["ScanCore", "ScanConsole", "ScanPlatform", "ScanLoop"], path: "Sources/Emergency/Linux",
      swiftSettings: swiftSettings),
    .target(
      name: "ScanKeypadLinux", dependencies: ["ScanCore", "ScanConsole", "ScanPlatform", "ScanLoop", "ScanAccessLinux", "CLinux", "CEvdev"],
      path: "Sources/Keypad/Linux", swiftSettings: swiftSettings),
    // The web admin page: its own process, a console client of the reader (never the loop).
    .target(
      name: "ScanAdminLinux", dependencies: ["ScanCore", "ScanPlatform", "ScanConsoleLinux", "CLinux", "CHTTPD"], path: "Sources/Admin/Linux",
      swiftSettings: swiftSettings),
    // Feedback's adapter: its own core, the platform (lines, poll set) and the console's STATUS type only.
    .target(
      name: "ScanFeedbackLinux", dependencies: ["ScanBase", "ScanFeedback", "ScanPlatform", "ScanLoop", "ScanConsole"], path: "Sources/Feedback/Linux",
      swiftSettings: swiftSettings),
    // Every adapter under one import, for the service, the tools and the tests.
    .target(
      name: "ScanLinux",
      dependencies: [
        "ScanPlatform", "ScanLoop", "ScanConfigLinux", "ScanAuditLinux", "ScanAccessLinux", "ScanReaderLinux", "ScanAccessSheet", "ScanDoorLinux",
        "ScanPanelsLinux", "ScanConsoleLinux", "ScanFleetLinux", "ScanTurnstileLinux", "ScanEmergencyLinux", "ScanKeypadLinux",
        "ScanAdminLinux", "ScanFeedbackLinux",
      ],
      swiftSettings: swiftSettings),

    // MARK: The service: the run loop and the composition root (`run`, `demo`, `soak`, tests in process).
    .target(
      name: "ScanService", dependencies: ["ScanCore", "ScanConsole", "ScanLinux"], path: "Sources/Service",
      swiftSettings: swiftSettings),

    // MARK: The tools beside the product: option parsing, `decode` and its bench harnesses, `soak`,
    // the console load generator, and the demo (its scenes, door and panel), which the CLI calls.
    .target(
      name: "ScanTools", dependencies: ["ScanCore", "ScanConsole", "ScanSim", "ScanLinux", "ScanService"], path: "Sources/Tools",
      swiftSettings: swiftSettings),

    // The deterministic simulator (docs/testing.md, "The simulator"): its world and deliberate
    // mutations live here, never in `scangate`.
    .target(
      name: "ScanSimulator", dependencies: ["ScanCore", "ScanSim", "ScanAccessLinux"], path: "Sources/Simulator", swiftSettings: swiftSettings),
    .executableTarget(
      name: "scangate-sim", dependencies: ["ScanCore", "ScanSimulator", "ScanPlatform"], path: "Sources/scangate-sim",
      swiftSettings: swiftSettings),
    .executableTarget(
      name: "scangate", dependencies: ["ScanCore", "ScanConsole", "ScanSim", "ScanLinux", "ScanService", "ScanTools"],
      swiftSettings: swiftSettings),

    // MARK: Tests.
    .target(name: "CAllocCounter", path: "Tests/CAllocCounter"),
    .target(name: "CTestSched", path: "Tests/CTestSched"),
    .target(name: "CTestJPEG", path: "Tests/CTestJPEG", linkerSettings: [.linkedLibrary("turbojpeg")]),
    // Each domain's core, tested alone on ScanSim's fakes: a test target imports the cores it
    // tests (and Base), never an adapter or a C library.
    coreTests("ScanBaseTests", ["ScanBase"]),
    // Config composes every section: its tests see the whole pure product.
    coreTests("ScanConfigTests", ["ScanCore"]),
    coreTests("ScanAccessTests", ["ScanBase", "ScanAccess"]),
    coreTests("ScanReaderTests", ["ScanBase", "ScanAccess", "ScanReader"]),
    coreTests("ScanDoorTests", ["ScanBase", "ScanDoor", "ScanAudit"]),
    coreTests("ScanTurnstileTests", ["ScanBase", "ScanTurnstile"]),
    coreTests("ScanEmergencyTests", ["ScanBase", "ScanEmergency"]),
    coreTests("ScanKeypadTests", ["ScanBase", "ScanKeypad"]),
    coreTests("ScanFeedbackTests", ["ScanBase", "ScanFeedback"]),
    coreTests("ScanFleetTests", ["ScanBase", "ScanAudit", "ScanFleet"]),
    coreTests("ScanConsoleTests", ["ScanCore", "ScanConsole"]),
    // Each adapter on real OS objects (files, ptys, sockets, the decoder, the binary as a process),
    // and the service in process; their shared support (temporary files, QR frames, a child
    // process, a credential site) is one library.
    .target(
      name: "ScanTestSupport", dependencies: ["ScanCore", "ScanConsole", "ScanSim", "ScanLinux", "ScanService"], path: "Tests/ScanTestSupport",
      swiftSettings: swiftSettings),
    adapterTests("ScanPlatformTests"),
    adapterTests("ScanAuditLinuxTests"),
    adapterTests("ScanAccessLinuxTests"),
    .testTarget(
      name: "ScanReaderLinuxTests",
      dependencies: ["ScanCore", "ScanConsole", "ScanSim", "ScanLinux", "ScanService", "ScanTestSupport", "CTestSched"],
      swiftSettings: swiftSettings),
    adapterTests("ScanDoorLinuxTests"),
    adapterTests("ScanPanelsLinuxTests"),
    adapterTests("ScanConsoleLinuxTests"),
    adapterTests("ScanFleetLinuxTests"),
    adapterTests("ScanTurnstileLinuxTests"),
    adapterTests("ScanEmergencyLinuxTests"),
    adapterTests("ScanKeypadLinuxTests"),
    adapterTests("ScanFeedbackLinuxTests"),
    adapterTests("ScanServiceTests"),
    .testTarget(
      name: "HotPathAllocationTests",
      dependencies: [
        "ScanCore", "ScanConsole", "ScanSim", "ScanLinux", "ScanService", "ScanTestSupport", "CAllocCounter", "CImageIO", "CTestJPEG",
      ],
      swiftSettings: swiftSettings),
  ],
  swiftLanguageModes: [.v6],
  cxxLanguageStandard: .cxx17
)

// Every C and C++ shim is built with `char` unsigned, as ARM's ABI has it (a Raspberry Pi's):
// the x86_64 builds and their tests then run the shims with the char a Pi has, so a shim that
// took char for signed fails here first (docs/arm64.md, "What differs on ARM"), and every
// build of the product behaves alike. The Linux kernel builds with -funsigned-char everywhere
// for the same reason.
for target in package.targets where target.type == .regular && target.name.hasPrefix("C") {
  target.cSettings = (target.cSettings ?? []) + [.unsafeFlags(["-funsigned-char"])]
  target.cxxSettings = (target.cxxSettings ?? []) + [.unsafeFlags(["-funsigned-char"])]
}

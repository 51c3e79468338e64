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

let package = Package(
  name: "ScanGate",
  products: [
    .executable(name: "scangate", targets: ["scangate"]),
    .library(name: "ScanCore", targets: ["ScanCore"]),
    .library(name: "ScanSim", targets: ["ScanSim"]),
  ],
  targets: [
    // Sources/ is one folder per domain. In each, Core/ is pure Swift (it imports no C) and
    // Linux/ is its adapter (target ScanLinux), beside the C shims that adapter alone uses (one C
    // library each). Service/Loop is the run loop. The cores, lowest first: each arrow below is a
    // dependency the compiler enforces.

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
    // Config: `ScanConfig`, the whole configuration, composed from every domain's section (on top).
    .target(
      name: "ScanConfig",
      dependencies: [
        "ScanBase", "ScanAccess", "ScanDoor", "ScanTurnstile", "ScanEmergency", "ScanKeypad", "ScanAudit", "ScanReader",
        "ScanPanels", "ScanFleet",
      ],
      path: "Sources/Config/Core", swiftSettings: swiftSettings),
    // ScanCore: every core above, re-exported (`import ScanCore` is the whole pure product).
    .target(
      name: "ScanCore",
      dependencies: [
        "ScanBase", "ScanAccess", "ScanDoor", "ScanTurnstile", "ScanEmergency", "ScanKeypad", "ScanAudit", "ScanReader",
        "ScanPanels", "ScanFleet", "ScanConfig",
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
    .target(
      name: "CCredential", path: "Sources/Access/CCredential",
      linkerSettings: [.linkedLibrary("cbor"), .linkedLibrary("nettle"), .linkedLibrary("sodium")]),
    .target(name: "CSheet", path: "Sources/Access/CSheet", linkerSettings: [.linkedLibrary("cairo"), .linkedLibrary("m")]),
    .target(
      name: "CToml", path: "Sources/Config/CToml",
      cxxSettings: [.define("TOML_HEADER_ONLY", to: "0"), .define("TOML_SHARED_LIB", to: "1")],
      linkerSettings: [.linkedLibrary("tomlplusplus"), .linkedLibrary("stdc++")]),

    // MARK: The adapters: the only Swift target that imports C.
    .target(
      name: "ScanLinux",
      dependencies: [
        "ScanCore", "ScanConsole", "CZXing", "CImageIO", "CV4L2", "CCamera", "CGPIOD", "CLinux", "CToml", "CSQLite", "CTLS", "CCredential", "CMosquitto",
        "CSandbox", "CSheet", "CEvdev",
      ],
      path: "Sources",
      sources: [
        "Base/Linux", "Access/Linux", "Reader/Linux", "Door/Linux", "Turnstile/Linux", "Emergency/Linux", "Keypad/Linux", "Panels/Linux",
        "Fleet/Linux", "Audit/Linux", "Console/Linux", "Config/Linux",
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

    .executableTarget(
      name: "scangate", dependencies: ["ScanCore", "ScanConsole", "ScanSim", "ScanLinux", "ScanService", "ScanTools"],
      swiftSettings: swiftSettings),

    // MARK: Tests.
    .target(name: "CAllocCounter", path: "Tests/CAllocCounter"),
    .target(name: "CTestJPEG", path: "Tests/CTestJPEG", linkerSettings: [.linkedLibrary("turbojpeg")]),
    .testTarget(name: "ScanCoreTests", dependencies: ["ScanCore", "ScanSim"], swiftSettings: swiftSettings),
    .testTarget(name: "ScanConsoleTests", dependencies: ["ScanCore", "ScanConsole", "ScanSim"], swiftSettings: swiftSettings),
    .testTarget(
      name: "ScanLinuxTests", dependencies: ["ScanCore", "ScanConsole", "ScanSim", "ScanLinux", "ScanService"],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "HotPathAllocationTests",
      dependencies: ["ScanCore", "ScanSim", "ScanLinux", "ScanService", "CAllocCounter", "CImageIO", "CTestJPEG"],
      swiftSettings: swiftSettings),
  ],
  swiftLanguageModes: [.v6],
  cxxLanguageStandard: .cxx17
)

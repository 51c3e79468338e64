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
    // MARK: Pure Swift (imports no C).
    .target(name: "ScanCore", swiftSettings: swiftSettings),
    .target(name: "ScanSim", dependencies: ["ScanCore"], swiftSettings: swiftSettings),
    .target(name: "ScanConsole", dependencies: ["ScanCore"], swiftSettings: swiftSettings),

    // MARK: Thin C/C++ bindings (one library each).
    .target(
      name: "CZXing",
      cxxSettings: [.unsafeFlags(["-I/usr/include/ZXing", "-std=c++17", "-O2"])],
      linkerSettings: [.linkedLibrary("ZXing"), .linkedLibrary("stdc++")]),
    .target(
      name: "CImageIO",
      cSettings: [.unsafeFlags(["-I/usr/include/stb", "-O2"])],
      linkerSettings: [
        .linkedLibrary("turbojpeg"), .linkedLibrary("jpeg"), .linkedLibrary("qrencode"), .linkedLibrary("m"),
      ]),
    .target(name: "CV4L2", linkerSettings: [.linkedLibrary("v4l2")]),
    .target(
      name: "CCamera",
      cxxSettings: [.unsafeFlags(["-I/usr/include/libcamera", "-O2"])]
        + (withLibcamera ? [.define("SG_WITH_LIBCAMERA")] : []),
      linkerSettings: (withLibcamera ? [.linkedLibrary("camera"), .linkedLibrary("camera-base")] : [])
        + [.linkedLibrary("stdc++")]),
    .target(name: "CGPIOD", linkerSettings: [.linkedLibrary("gpiod")]),
    .target(name: "CLinux", linkerSettings: [.linkedLibrary("sodium")]),
    .target(name: "CSandbox", linkerSettings: [.linkedLibrary("seccomp")]),
    .target(name: "CSQLite", linkerSettings: [.linkedLibrary("sqlite3")]),
    .target(name: "CTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
    .target(name: "CMosquitto", linkerSettings: [.linkedLibrary("mosquitto")]),
    .target(
      name: "CCredential", linkerSettings: [.linkedLibrary("cbor"), .linkedLibrary("nettle"), .linkedLibrary("sodium")]),
    .target(
      name: "CToml",
      cxxSettings: [.define("TOML_HEADER_ONLY", to: "0"), .define("TOML_SHARED_LIB", to: "1")],
      linkerSettings: [.linkedLibrary("tomlplusplus"), .linkedLibrary("stdc++")]),

    // MARK: The only Swift target that imports C.
    .target(
      name: "ScanLinux",
      dependencies: [
        "ScanCore", "ScanConsole", "CZXing", "CImageIO", "CV4L2", "CCamera", "CGPIOD", "CLinux", "CToml", "CSQLite", "CTLS", "CCredential", "CMosquitto",
        "CSandbox",
      ],
      swiftSettings: swiftSettings),

    .executableTarget(
      name: "scangate", dependencies: ["ScanCore", "ScanConsole", "ScanSim", "ScanLinux", "CLinux"],
      swiftSettings: swiftSettings),

    // MARK: Tests.
    .target(name: "CAllocCounter", path: "Tests/CAllocCounter"),
    .target(name: "CTestJPEG", path: "Tests/CTestJPEG", linkerSettings: [.linkedLibrary("turbojpeg")]),
    .testTarget(name: "ScanCoreTests", dependencies: ["ScanCore", "ScanSim"], swiftSettings: swiftSettings),
    .testTarget(name: "ScanConsoleTests", dependencies: ["ScanCore", "ScanConsole", "ScanSim"], swiftSettings: swiftSettings),
    .testTarget(
      name: "ScanLinuxTests", dependencies: ["ScanCore", "ScanConsole", "ScanSim", "ScanLinux"],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "HotPathAllocationTests",
      dependencies: ["ScanCore", "ScanSim", "ScanLinux", "CAllocCounter", "CImageIO", "CTestJPEG"],
      swiftSettings: swiftSettings),
  ],
  swiftLanguageModes: [.v6],
  cxxLanguageStandard: .cxx17
)

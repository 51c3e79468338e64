import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate probe`: what this machine offers a reader, to fill in config.toml.
enum ProbeCommand {
  static func run(_ arguments: [String]) -> Int32 {
    let all: Bool
    let options: Options
    do {
      options = try Options(arguments, valued: ["config"], known: ["all-lines"])
      all = options.flag("all-lines")
    } catch {
      writeStandardError("scangate probe: \(error)\n")
      return 2
    }
    print("cameras (config [camera] device, format, width, height):")
    let cameras = Probe.cameras()
    if cameras.isEmpty { print("  none (/dev/video*)") }
    for c in cameras {
      if let error = c.error { print("  \(c.path): cannot open: \(error)"); continue }
      print("  \(c.path): \(c.card) (\(c.driver))\(c.canCapture ? "" : ", not a capture node")")
      let usable = ["GREY", "YUYV", "YU12", "NV12", "NV21", "RGB3", "BGR3", "MJPG", "JPEG"]
      for f in c.formats where usable.contains(f.fourcc) {
        print("    \(f.fourcc): \(f.sizes.prefix(12).joined(separator: " "))\(f.sizes.count > 12 ? " ..." : "")")
      }
      let others = c.formats.map(\.fourcc).filter { !usable.contains($0) }
      if !others.isEmpty { print("    also (not read by scangate, which reads GREY, YUYV, YUV 4:2:0, RGB and MJPEG): \(others.joined(separator: " "))") }
    }
    for (link, target) in Probe.links(in: "/dev/v4l/by-id") { print("  stable name \(link) -> \(target)") }
    printLibcameraCameras()
    print("gpio chips (config [gpio] chip: a path, name or label; relay_line, buzzer_line: offsets):")
    let chips = Probe.chips()
    if chips.isEmpty { print("  none (/dev/gpiochip*)") }
    for chip in chips {
      if let error = chip.error { print("  \(chip.path): cannot open: \(error)"); continue }
      let free = chip.lines.filter { !$0.used }.count
      print("  \(chip.path): name \(chip.name), label \(chip.label), \(chip.lines.count) lines, \(free) free")
      for l in chip.lines where all || l.used || !l.name.isEmpty {
        var line = "    line \(l.offset)"
        if !l.name.isEmpty { line += " \"\(l.name)\"" }
        line += l.used ? " used by \(l.consumer.isEmpty ? "kernel" : l.consumer)" : " free"
        if l.output { line += ", output" }
        print(line)
      }
    }
    var config = ScanConfig()
    if options.value("config") != nil {
      guard let loaded = loadConfig(options) else { return 1 }
      config = loaded
    }
    ProbeOutputs.report(config, chips: chips)
    print("serial ports (config [console] serial_path):")
    let ports = Probe.serialPorts()
    if ports.isEmpty { print("  none") }
    for p in ports { print("  \(p)") }
    for (link, target) in Probe.links(in: "/dev/serial/by-id") { print("  stable name \(link) -> \(target)") }
    print("decoder \(ZXingDecoder.engineVersion), libgpiod \(GPIODOutputLine.libraryVersion)")
    return 0
  }

  /// libcamera's cameras (CSI camera modules), with the stream and sensor modes they offer.
  static func printLibcameraCameras() {
    guard LibcameraFrameSource.isBuilt else {
      print("libcamera cameras: \(LibcameraFrameSource.unavailableReason ?? "not built")")
      return
    }
    print("libcamera \(LibcameraFrameSource.libraryVersion) cameras (config [camera] source = \"libcamera\", libcamera_id, width, height):")
    let (count, text) = LibcameraFrameSource.list()
    if count < 0 {
      print("  cannot list: \(text)")
    } else if count == 0 {
      print("  none")
    } else {
      print(text, terminator: "")
    }
  }
}

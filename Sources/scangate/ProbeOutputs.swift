import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate probe`'s boot-safety part: each configured output line's level and bias before the
/// service claims it, and a warning when what the pin does at boot would energise the load.
enum ProbeOutputs {
  static func report(_ config: ScanConfig, chips: [Probe.Chip]) {
    guard config.gpio.backend == .gpiod else { return }
    var outputs: [(String, Int, Bool)] = [
      ("relay", config.gpio.relayLine, config.gpio.relayActiveLow), ("buzzer", config.gpio.buzzerLine, config.gpio.buzzerActiveLow),
    ]
    if config.door.alarmLine >= 0 { outputs.append(("alarm", config.door.alarmLine, config.door.alarmActiveLow)) }
    if config.door.auxRelayLine >= 0 {
      outputs.append(("second relay", config.door.auxRelayLine, config.door.auxRelayActiveLow))
    }
    let label = chips.first { $0.name == config.gpio.chip || $0.label == config.gpio.chip || $0.path == config.gpio.chip }?.label ?? ""
    print("outputs at boot (\(config.gpio.chip); strike wiring \(config.door.strikeWiring.rawValue)):")
    for (name, offset, activeLow) in outputs {
      switch Probe.lineState(chip: config.gpio.chip, offset: offset) {
      case .failure(let error):
        print("  \(name) line \(offset): cannot read: \(error)")
      case .success(let s):
        var line = "  \(name) line \(offset) (\(activeLow ? "active-low" : "active-high")): "
        line += s.used ? "in use" : (s.output ? "output" : "input")
        line += ", level " + (s.level.map(String.init) ?? "unknown")
        line += ", bias " + (s.bias?.rawValue ?? "not reported")
        let piDefault = BootSafety.piDefaultPull(chipLabel: label, offset: offset)
        if let piDefault { line += ", Pi boot pull \(piDefault.rawValue)" }
        print(line)
        let idle = s.output ? s.level : BootSafety.idleLevel(bias: s.bias, piDefault: piDefault)
        if BootSafety.energised(level: idle, activeLow: activeLow) == true || BootSafety.energised(level: s.level, activeLow: activeLow) == true {
          print(
            "    WARNING: at boot this pin sits at the \(name)'s active level: it is energised until scangate starts; "
              + "add \(BootSafety.configLine(offset: offset, activeLow: activeLow)) to /boot/firmware/config.txt")
        }
      }
    }
  }
}

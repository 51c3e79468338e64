import ScanBase

/// The reader's schema fragments, each over the settings section it sets: camera supervision
/// and libcamera's controls (`[camera]`), presence (`[presence]`), and the relay's and
/// buzzer's timing (`[gpio]`). The camera's, decoder's and lines' own keys set `ScanConfig`'s
/// fields and live with it (ConfigSchema.swift).

extension CameraSupervisor.Settings {
  fileprivate typealias Key = ConfigKey<CameraSupervisor.Settings>

  /// The frame timeout and reopen backoff (`[camera]`).
  package static let configKeys: [ConfigKey<CameraSupervisor.Settings>] = [
    Key(name: "camera.reopen_backoff_ms_max", kind: .integer(100...10_000)) { $0.reopenBackoffMillisecondsMax = $1.asInt },
    Key(name: "camera.frame_timeout_ms", kind: .integer(100...30_000)) { $0.frameTimeoutMilliseconds = $1.asInt },
  ]
}

extension LibcameraSettings {
  fileprivate typealias Key = ConfigKey<LibcameraSettings>

  /// Which libcamera camera, its exposure and focus (`[camera]`).
  package static let configKeys: [ConfigKey<LibcameraSettings>] = [
    Key(name: "camera.libcamera_id", kind: .string) { $0.camera = $1.asString },
    Key(name: "camera.exposure_us", kind: .integer(0...10_000_000)) { $0.exposureMicroseconds = $1.asInt },
    Key(name: "camera.exposure_max_us", kind: .integer(0...10_000_000)) { $0.exposureMaxMicroseconds = $1.asInt },
    Key(name: "camera.autofocus", kind: .choice(AutofocusMode.allCases.map(\.rawValue))) {
      $0.autofocus = AutofocusMode(rawValue: $1.asString)!
    },
    Key(name: "camera.focus_mm", kind: .integer(0...100_000)) { $0.focusMillimetres = $1.asInt },
  ]
}

extension EngineSettings {
  fileprivate typealias Key = ConfigKey<EngineSettings>

  /// `[presence]`'s keys: when a code counts as present, gone, and decided again.
  package static let presenceKeys: [ConfigKey<EngineSettings>] = [
    Key(name: "presence.confirm_frames", kind: .integer(1...30)) { $0.presence.confirmFrames = $1.asInt },
    Key(name: "presence.leave_after_ms", kind: .integer(50...60_000)) { $0.presence.leaveAfterMilliseconds = $1.asInt },
    Key(name: "presence.cooldown_ms", kind: .integer(0...600_000)) { $0.presence.cooldownMilliseconds = $1.asInt },
    Key(name: "presence.repeat_ms", kind: .integer(0...600_000)) { $0.presence.repeatMilliseconds = $1.asInt },
    Key(name: "presence.slots", kind: .integer(1...1024)) { $0.presenceSlots = $1.asInt },
  ]
}

extension ActuationSettings {
  fileprivate typealias Key = ConfigKey<ActuationSettings>

  /// The relay pulse and the buzzer's patterns (`[gpio]`).
  package static let configKeys: [ConfigKey<ActuationSettings>] = [
    Key(name: "gpio.relay_pulse_ms", kind: .integer(50...relayPulseMillisecondsCap)) { $0.relayPulseMilliseconds = $1.asInt },
    Key(name: "gpio.relay_pulse_ms_max", kind: .integer(50...relayPulseMillisecondsCap)) { $0.relayPulseMillisecondsMax = $1.asInt },
    Key(name: "gpio.grant_pattern", kind: .integers(1...5_000, count: 1...8)) { $0.grantPattern = BuzzerPattern($1.asInts) },
    Key(name: "gpio.deny_pattern", kind: .integers(1...5_000, count: 1...8)) { $0.denyPattern = BuzzerPattern($1.asInts) },
    Key(name: "gpio.fault_pattern", kind: .integers(1...5_000, count: 1...8)) { $0.faultPattern = BuzzerPattern($1.asInts) },
  ]

  /// The pulse may not exceed its own maximum.
  package func configProblems(line: ConfigLineLookup) -> [ConfigError] {
    guard relayPulseMilliseconds > relayPulseMillisecondsMax else { return [] }
    return [
      ConfigError(
        key: "gpio.relay_pulse_ms", line: line("gpio.relay_pulse_ms"),
        reason: "\(relayPulseMilliseconds) exceeds gpio.relay_pulse_ms_max (\(relayPulseMillisecondsMax))")
    ]
  }
}

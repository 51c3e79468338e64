import ScanBase
import ScanFeedback
import ScanPanels
import ScanReader

/// What the configuration makes of its keys beyond setting them, and the checks of a section
/// that looks at another's.
extension ConfigSchema {
  /// Settings that follow from others once every key is read.
  static func derive(_ config: inout ScanConfig) {
    // A large camera mode reads with the large-frame order (docs/decoder.md): a downscaled whole
    // view every frame, full-resolution tiles and the tracked region in turn.
    if config.engine.decode.attempts == DecodeAttempt.readerDefault && config.camera.width * config.camera.height >= 1280 * 720 {
      config.engine.decode.attempts = DecodeAttempt.readerLarge(width: config.camera.width)
    }
    // Buzzer-free: the lamps say what the chirps would have.
    if config.feedback.quiet {
      config.engine.actuation.grantPattern = .silent
      config.engine.actuation.denyPattern = .silent
      config.engine.actuation.pinPromptPattern = .silent
    }
  }

  /// `[feedback]`: a buzzer-free reader must show something, and in panel mode the panel drives
  /// the reader's lamps (osdp_LED, Wiegand's LED wire).
  static func feedbackProblems(_ c: ScanConfig, line: ConfigLineLookup) -> [ConfigError] {
    var errors: [ConfigError] = []
    if c.feedback.quiet && !c.feedback.isWired {
      errors.append(
        ConfigError(
          key: "feedback.quiet", line: line("feedback.quiet"),
          reason: "a buzzer-free reader needs a lamp to say granted or denied: wire feedback.green_line and red_line"))
    }
    if c.feedback.isWired && c.panel.mode == .panel {
      let key = c.feedback.linesInUse.first { $0.offset >= 0 }!.key
      errors.append(
        ConfigError(key: key, line: line(key), reason: "in panel mode the panel drives the reader's lamps (osdp_LED, Wiegand's LED wire)"))
    }
    return errors
  }
}

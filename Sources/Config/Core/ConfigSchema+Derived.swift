import ScanBase
import ScanReader

/// What the configuration makes of its keys beyond setting them.
extension ConfigSchema {
  /// Settings that follow from others once every key is read.
  static func derive(_ config: inout ScanConfig) {
    // A large camera mode reads with the large-frame order (docs/decoder.md): a downscaled whole
    // view every frame, full-resolution tiles and the tracked region in turn.
    if config.engine.decode.attempts == DecodeAttempt.readerDefault && config.camera.width * config.camera.height >= 1280 * 720 {
      config.engine.decode.attempts = DecodeAttempt.readerLarge(width: config.camera.width)
    }
    // Buzzer-free: a domain (the lamps) says what the chirps would have.
    if domains.contains(where: { $0.replacesChirps(config) }) {
      config.engine.actuation.grantPattern = .silent
      config.engine.actuation.denyPattern = .silent
      config.engine.actuation.pinPromptPattern = .silent
    }
  }
}

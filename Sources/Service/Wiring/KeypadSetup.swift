import ScanCore
import ScanLinux

/// The PIN keypad on the loop (docs/admin.md, "PIN"): the engine's second factor, or in panel
/// mode the panel's keypad.
public enum KeypadSetup {
  /// Opens a keypad's Linux input device, grabbed (tests give their own source instead).
  static func openDevice(_ path: String) throws(FileError) -> any KeySource { try EvdevKeypad(path: path) }
}

extension Service {
  /// The keypad, when `[keypad] device` is set: a keypad that cannot be opened now is a fault on
  /// STATUS and the journal (every PIN refused until it is back); a PIN key that cannot be read
  /// refuses the start. In panel mode over OSDP (`panel`) the keys go to the panel instead (it
  /// checks PINs): no PIN key, no second factor here.
  static func attachKeypad<S: LoopFrameSource & ~Copyable, D: CodeDecoder & ~Copyable, R: OutputLine & ~Copyable, B: OutputLine & ~Copyable>(
    _ config: ScanConfig, options: Options, time: TrustedTime, panel: (any KeypadSink)?,
    loop: inout RunLoop<S, D, R, B, SystemMonotonicClock, SystemWallClock, SodiumDigester>
  ) throws(SetupRefused) {
    let settings = config.keypad
    guard settings.enabled else { return }
    let open: () -> (any KeySource)? = {
      if let injected = options.keySource { return injected }
      return try? KeypadSetup.openDevice(settings.device)
    }
    var source = options.keySource
    if source == nil {
      do { source = try KeypadSetup.openDevice(settings.device) } catch {
        writeStandardError("scangate: keypad: \(error); \(panel == nil ? "every PIN is refused" : "no key reaches the panel") until it is back\n")
      }
    }
    if let panel {
      loop.register(KeypadForwarder(source: source, sourceName: settings.device, reopen: options.keySource == nil ? open : nil, sink: panel))
      return
    }
    var key: [UInt8]
    do { key = try CredentialFiles.readSecretKey(settings.pinKeyFile) } catch {
      writeStandardError("scangate: refused: keypad.pin_key_file: \(error)\n")
      throw SetupRefused()
    }
    defer { SecretBytes.wipe(&key) }
    do {
      let keypad = try KeypadController(
        settings: settings, source: source, sourceName: settings.device, reopen: options.keySource == nil ? open : nil, pinKey: key,
        wall: SystemWallClock(), time: time, attemptPath: config.statePath("pin-attempts"))
      loop.engine.secondFactor = keypad
      loop.register(keypad)
      loop.helpers.pinVerifier = { [keypad] digest, pin in keypad.verifier(digest: digest, pin: pin) }
    } catch {
      writeStandardError("scangate: refused: keypad: \(error)\n")
      throw SetupRefused()
    }
  }
}

import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate check-config`: the configuration and every file it names, checked as the service would.
enum CheckConfigCommand {
  static func run(_ arguments: [String]) -> Int32 {
    do {
      let options = try Options(arguments, valued: ["config"], known: [])
      guard let config = loadConfig(options), let path = configPath(options) else { return 1 }
      print("\(path): OK")
      var status: Int32 = 0
      // The schedules and the allow-list, parsed exactly as the service would, each reference resolved.
      if !CheckConfigFiles.checkLists(config) { status = 1 }
      // File modes, OSDP install mode, where the fleet's bundles write (warnings only).
      CheckConfigFiles.report(config, configPath: path)
      // Every other path the reader reads or writes, checked without blocking: a FIFO, a
      // directory or a device where a file belongs is named and refused (the allow-list is above).
      for (entry, problem) in PathChecks.problems(config) where entry.role != "allow_list.path" {
        print("refused: \(entry.role) \(entry.path): \(problem)")
        status = 1
      }
      print(
        "source: \(config.camera.source.rawValue) \(sourceName(config)) "
          + "\(config.camera.width)x\(config.camera.height) format \(config.camera.format.rawValue)")
      print(
        "decoder: \(ZXingDecoder.engineVersion), formats \(config.engine.decode.formats.listDescription), "
          + "views \(config.engine.decode.variantMode.rawValue) over \(config.engine.decode.variants.map(\.name).joined(separator: ","))")
      print(
        "gpio: \(config.gpio.backend.rawValue) \(config.gpio.chip) relay line \(config.gpio.relayLine)\(config.gpio.relayActiveLow ? " (active-low)" : "") "
          + "buzzer line \(config.gpio.buzzerLine)\(config.gpio.buzzerActiveLow ? " (active-low)" : ""), pulse \(config.engine.actuation.relayPulseMilliseconds) ms "
          + "(max \(config.engine.actuation.relayPulseMillisecondsMax) ms)")
      // Where the state that protects decisions lives (docs/credentials.md, "What survives a restart").
      if let directory = config.stateDirectory {
        let refused = config.credentials.enabled ? ": rotating, single-use and counted passes are refused until it exists" : ""
        let missing = isDirectory(directory) ? "" : " (MISSING\(refused))"
        print("state: \(directory): rotating steps, used passes, clock floor, revocation version\(missing)")
      } else {
        let refused = config.credentials.enabled ? ": rotating and single-use passes and revocation lists are refused" : ""
        print("state: none (no state.directory and no log.path)\(refused)")
      }
      if let problem = consoleRingProblem(config) {
        print("console: \(problem)")
        status = 1
      }
      if !checkConsole(ConsoleSettings(config)) { status = 1 }
      print("memory budget (allocated at startup):")
      let budget = MemoryBudget.withConsole(config)
      for line in budget.lines { print("  " + String(line.bytes / 1024).padding(toLength: 8, left: true) + " KiB  " + line.name) }
      print("  " + String(budget.totalBytes / 1024).padding(toLength: 8, left: true) + " KiB  total")
      return status
    } catch {
      writeStandardError("scangate check-config: \(error)\n")
      return 2
    }
  }
  /// The console's listeners as the service would serve them (plain text or TLS), or why the
  /// service would run without its console (a refused listener, unusable TLS files).
  static func checkConsole(_ settings: ConsoleSettings) -> Bool {
    do {
      let listeners = try ConsoleListener.plan(settings)
      var tls: ConsoleTLS? = nil
      if !settings.tlsCertFile.isEmpty {
        tls = try ConsoleTLS(certFile: settings.tlsCertFile, keyFile: settings.tlsKeyFile, clientCAFile: settings.tlsClientCAFile)
      }
      for listener in listeners {
        let how =
          listener.tls
          ? "TLS" + (tls?.requiresClientCertificates == true ? ", client certificates required" : "")
          : listener.loopback ? "plain text, loopback" : "PLAIN TEXT on the network (console.allow_plaintext_remote)"
        print("console: \(listener) (\(how))")
      }
      return true
    } catch {
      print("console: refused, the service would run without it: \(error)")
      return false
    }
  }
}

/// What `check-config` names as the frame source: the device, the libcamera camera or the replay.
func sourceName(_ config: ScanConfig) -> String {
  let first =
    switch config.camera.source {
    case .v4l2: config.camera.device
    case .libcamera: config.libcamera.camera.isEmpty ? "(the first libcamera camera)" : config.libcamera.camera
    case .replay: config.camera.replayPath
    }
  // A turnstile's exit camera (turnstile.direction = "camera").
  return config.camera.second.isEmpty ? first : first + " (entry) and " + config.camera.second + " (exit)"
}

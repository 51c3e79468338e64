import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanTools

/// `scangate run`: the reader service.
enum RunCommand {
  static func run(_ arguments: [String]) -> Int32 {
    do {
      let options = try Options(arguments, valued: ["config", "frames"], known: ["quiet-edges", "sim-passages"])
      guard let config = loadConfig(options) else { return 1 }
      var serviceOptions = Service.Options()
      serviceOptions.configPath = configPath(options).map(BackupCommand.absolute)
      serviceOptions.maxFrames = UInt64(try options.integer("frames", default: 0, range: 0...Int.max))
      if options.flag("quiet-edges") { serviceOptions.skipping = [.edge] }
      // gpio.backend = "sim": every grant's passage is reported (a service process test's turnstile).
      if options.flag("sim-passages") { serviceOptions.turnstileDriver = { SimulatedPassages(lines: $0.lines, ring: $0.ring) } }
      return Service.run(config, options: serviceOptions)
    } catch {
      writeStandardError("scangate run: \(error)\n")
      return 2
    }
  }
}

import ScanCore
import ScanLinux
import ScanService
import ScanTools

enum VersionCommand {
  static func run(_ arguments: [String]) -> Int32 {
    do { _ = try Options(arguments, valued: [], known: []) } catch {
      writeStandardError("scangate version: \(error)\n")
      return 2
    }
    print("scangate \(ScanGateVersion.string)")
    print("decoder: \(ZXingDecoder.engineVersion)")
    print("gpio: libgpiod \(GPIODOutputLine.libraryVersion)")
    return 0
  }
}

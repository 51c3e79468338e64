import ScanCore
import ScanLinux

enum VersionCommand {
  static func run(_ arguments: [String]) -> Int32 {
    print("scangate \(ScanGateVersion.string)")
    print("decoder: \(ZXingDecoder.engineVersion)")
    print("gpio: libgpiod \(GPIODOutputLine.libraryVersion)")
    return 0
  }
}

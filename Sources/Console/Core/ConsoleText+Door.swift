import ScanCore

extension ConsoleText {
  /// DOOR: `| door closed, strike locked; ...` then `OK door`, or `ERR 404 no door configured`.
  public static func writeDoor(_ door: DoorStatus?, into w: inout ByteWriter) {
    guard let door else {
      w.write("ERR 404 no door configured\n")
      return
    }
    w.write("| ")
    door.write(into: &w)
    w.newline()
    w.write("OK door ")
    w.write(door.state.name)
    w.newline()
  }
}

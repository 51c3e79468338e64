import CGPIOD
import CLinux
import CV4L2
import Glibc
import ScanCore
import ScanPlatform

/// What the machine offers a reader: cameras with their native formats and sizes, GPIO chips
/// with labels, line names and which lines are free, and serial ports (`scangate probe`).
public enum Probe {
  /// One camera node.
  public struct Camera: Sendable {
    public var path: String
    public var driver = ""
    public var card = ""
    public var canCapture = false
    public var formats: [(fourcc: String, sizes: [String])] = []
    public var error: String? = nil
  }

  /// One GPIO chip.
  public struct Chip: Sendable {
    public var path: String
    public var name = ""
    public var label = ""
    public var lines: [(offset: Int, name: String, consumer: String, used: Bool, output: Bool)] = []
    public var error: String? = nil
  }

  static func devices(matching prefixes: [String]) -> [String] {
    ((try? listDirectory("/dev")) ?? []).filter { name in prefixes.contains { name.hasPrefix($0) } }
      .sorted { a, b in a.count != b.count ? a.count < b.count : a < b }.map { "/dev/" + $0 }
  }

  /// Stable names (symbolic links) in `folder`, with what they point at.
  public static func links(in folder: String) -> [(String, String)] {
    ((try? listDirectory(folder)) ?? []).compactMap { name in
      var buffer = [CChar](repeating: 0, count: 4096)
      let n = readlink(folder + "/" + name, &buffer, buffer.count - 1)
      guard n > 0 else { return nil }
      return (folder + "/" + name, String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
  }

  public static func cameras() -> [Camera] {
    devices(matching: ["video"]).map { path in
      var camera = Camera(path: path)
      let fd: Int32
      do throws(SystemError) { fd = try syscall("open \(path)", { sg_v4l2_open(path) }) } catch {
        camera.error = error.code.description
        return camera
      }
      defer { _ = sg_v4l2_close(fd) }
      var driver = [CChar](repeating: 0, count: 32), card = [CChar](repeating: 0, count: 64)
      var streaming: Int32 = 0
      do throws(SystemError) { _ = try syscall("VIDIOC_QUERYCAP", { sg_v4l2_query(fd, &driver, driver.count, &card, card.count, &streaming) }) } catch {
        camera.error = error.code.description
        return camera
      }
      camera.driver = driver.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
      camera.card = card.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
      camera.canCapture = streaming != 0
      var index: UInt32 = 0, fourcc: UInt32 = 0
      while camera.canCapture && index < 64 && sg_v4l2_enum_format(fd, index, &fourcc) == 0 {
        index += 1
        guard fourcc != 0 else { continue }
        var sizes: [String] = []
        var s: UInt32 = 0, w: UInt32 = 0, h: UInt32 = 0
        while s < 64 && sg_v4l2_enum_size(fd, fourcc, s, &w, &h) == 0 {
          sizes.append("\(w)x\(h)")
          s += 1
        }
        camera.formats.append((V4L2FrameSource.name(fourcc), sizes))
      }
      return camera
    }
  }

  public static func chips() -> [Chip] {
    devices(matching: ["gpiochip"]).map { path in
      var chip = Chip(path: path)
      var info = sg_gpio_chip_info()
      let lines = UnsafeMutableBufferPointer<sg_gpio_line_info>.allocate(capacity: 512)
      defer { lines.deallocate() }
      // A libgpiod call (several ioctls): report its errno, never trap on it.
      guard sg_gpio_probe(path, &info, lines.baseAddress, 512) == 0 else {
        chip.error = Errno.current.description
        return chip
      }
      func text<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
      }
      chip.name = text(info.name)
      chip.label = text(info.label)
      for i in 0..<min(Int(info.lines), 512) {
        let l = lines[i]
        chip.lines.append((i, text(l.name), text(l.consumer), l.used != 0, l.output != 0))
      }
      return chip
    }
  }

  public static func serialPorts() -> [String] {
    devices(matching: ["ttyUSB", "ttyACM", "ttyAMA", "serial"]) + devices(matching: ["ttyS"]).prefix(4)
  }
}

extension Probe {
  /// One output line's state before the service claims it.
  public struct LineState: Sendable {
    public var used = false
    public var output = false
    /// The bias the kernel reports (nil: it does not say).
    public var bias: LineBias? = nil
    /// The physical level now (nil: unknown, e.g. in use).
    public var level: Int? = nil
  }

  /// Reads `offset` on `chip` without changing its direction; a description of the failure otherwise.
  public static func lineState(chip: String, offset: Int) -> Result<LineState, SystemError> {
    var info = sg_gpio_line_state_info()
    guard sg_gpio_line_state(chip, UInt32(offset), &info) == 0 else {
      return .failure(SystemError(Errno(rawValue: sg_errno()), operation: "read \(chip) line \(offset)"))
    }
    var s = LineState()
    s.used = info.used != 0
    s.output = info.output != 0
    switch info.bias {
    case Int32(SG_BIAS_PULL_UP): s.bias = .pullUp
    case Int32(SG_BIAS_PULL_DOWN): s.bias = .pullDown
    case Int32(SG_BIAS_DISABLED): s.bias = .disabled
    default: s.bias = nil
    }
    s.level = info.level < 0 ? nil : Int(info.level)
    return .success(s)
  }
}

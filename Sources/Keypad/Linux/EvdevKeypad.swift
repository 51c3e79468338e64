import CEvdev
import Glibc
import ScanCore
import ScanPlatform

/// A USB numeric keypad (or a keyboard's number row) through the Linux input subsystem, read
/// with libevdev. The device is grabbed for the owner's lifetime: its keys go to no console and
/// no other program meanwhile, and a second owner is refused. The code buffer is allocated here,
/// once; reading keys allocates nothing.
public final class EvdevKeypad: KeySource {
  private let device: OpaquePointer
  public let path: String
  /// The device's name as the kernel reports it ("… USB Keypad"), for STATUS and the journal.
  public let name: String
  public let descriptor: Int32
  private let codes: UnsafeMutableBufferPointer<UInt16>
  /// Key presses taken per call of libevdev's drain: a person types a few a second.
  static let batch = 32
  /// Batches per `read`: the rest waits for the next poll.
  static let batchesPerRead = 4

  /// Opens, checks and grabs the event device at `path` (a /dev/input/by-id/…-event-kbd link is
  /// followed). Refused with a reason a technician can act on: not found, permission, not a
  /// character device, not an input event device, not a keypad (no digit keys), already grabbed.
  public init(path: String) throws(FileError) {
    var handle: OpaquePointer? = nil
    var refusal = sg_evdev_refusal()
    let fd: Int32
    do {
      fd = try syscall("open \(path)", { sg_evdev_open(path, &handle, &refusal) })
    } catch {
      throw FileError(path: path, reason: Self.reason(error.code, refusal))
    }
    guard let handle else { preconditionFailure("sg_evdev_open returned \(fd) without a device") }
    device = handle
    self.path = path
    descriptor = fd
    name = Self.printable(String(cString: sg_evdev_name(handle)))
    codes = .allocate(capacity: Self.batch)
    codes.initialize(repeating: 0)
  }

  deinit {
    sg_evdev_close(device)
    codes.deallocate()
  }

  public func read(_ body: (KeypadKey) -> Void) -> Bool {
    for _ in 0..<Self.batchesPerRead {
      let result: IOResult<Int32>
      do {
        result = try syscallRetrying("read keypad \(path)", { sg_evdev_read(device, codes.baseAddress, Int32(Self.batch)) })
      } catch {
        return false  // ENODEV: unplugged; any other error: the device failed. The owner closes it.
      }
      guard case .done(let count) = result else { return true }  // nothing more waiting
      for i in 0..<Int(count) {
        if let key = KeypadKey(linuxCode: codes[i]) { body(key) }
      }
      if Int(count) < Self.batch { return true }
    }
    return true
  }

  /// The longest device name kept (the kernel's own limit is larger).
  public static let nameCharactersMax = 80

  /// The device's name as the USB device gave it, made safe for a terminal, STATUS and the
  /// journal: control characters become "?", and it is cut at `nameCharactersMax`.
  public static func printable(_ name: String) -> String {
    var kept = String.UnicodeScalarView()
    for scalar in name.unicodeScalars.prefix(nameCharactersMax) {
      kept.append(scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format ? "?" : scalar)
    }
    return String(kept)
  }

  /// The reason a person reads for a refused open.
  static func reason(_ code: Errno, _ refusal: sg_evdev_refusal) -> String {
    switch Int(refusal.reason) {
    case Int(SG_EVDEV_NOT_CHARACTER_DEVICE):
      return "\(kind(mode_t(refusal.mode))), not a character device: not a keypad"
    case Int(SG_EVDEV_NOT_INPUT_DEVICE):
      return "a character device outside the input subsystem: not a keypad (use /dev/input/by-id/…-event-kbd)"
    case Int(SG_EVDEV_NOT_EVENT_DEVICE):
      return "an input device but not an event device: not a keypad (use /dev/input/by-id/…-event-kbd)"
    case Int(SG_EVDEV_NOT_KEYPAD):
      return "an input device without the ten digit keys: not a keypad"
    default: break
    }
    switch code.rawValue {
    case ENOENT: return "not found (is the keypad plugged in? see /dev/input/by-id/)"
    case EACCES, EPERM: return "permission denied (the service user needs group input)"
    case EBUSY: return "already grabbed by another program"
    case ENODEV, ENXIO: return "the device is gone"
    default: return code.description
    }
  }

  static func kind(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFDIR: "a directory"
    case S_IFIFO: "a FIFO (named pipe)"
    case S_IFBLK: "a block device"
    case S_IFSOCK: "a socket"
    case S_IFREG: "a regular file"
    default: "not a device"
    }
  }
}

/// One key of a numeric keypad, as the PIN entry reads it.
public enum KeypadKey: Equatable, Sendable {
  /// 0–9.
  case digit(UInt8)
  /// Enter, `#` (submits the PIN).
  case enter
  /// Backspace, Escape, `*` (starts the PIN again).
  case clear

  /// The byte OSDP's osdp_KEYPAD reply carries for it: '0'–'9' as ASCII, enter as 0x0D (CR),
  /// clear as 0x7F (DEL) (OSDP 2.2, the keypad data report).
  public var osdpByte: UInt8 {
    switch self {
    case .digit(let d): 0x30 + d
    case .enter: 0x0D
    case .clear: 0x7F
    }
  }

  /// The key a Linux input key code (linux/input-event-codes.h) stands for on a numeric keypad or
  /// a keyboard's number row; nil for every other key (ignored).
  public init?(linuxCode code: UInt16) {
    switch code {
    case 2...10: self = .digit(UInt8(code - 1))  // KEY_1 … KEY_9
    case 11: self = .digit(0)  // KEY_0
    case 71, 72, 73: self = .digit(UInt8(code - 64))  // KEY_KP7 … KEY_KP9
    case 75, 76, 77: self = .digit(UInt8(code - 71))  // KEY_KP4 … KEY_KP6
    case 79, 80, 81: self = .digit(UInt8(code - 78))  // KEY_KP1 … KEY_KP3
    case 82: self = .digit(0)  // KEY_KP0
    case 28, 96: self = .enter  // KEY_ENTER, KEY_KPENTER
    case 14, 1, 55: self = .clear  // KEY_BACKSPACE, KEY_ESC, KEY_KPASTERISK
    default: return nil
    }
  }
}

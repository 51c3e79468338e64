import Glibc
import ScanCore
import ScanLinux
import ScanTestSupport
import Testing

/// The keypad's key map against the kernel's own header, and `EvdevKeypad`'s refusals of what is
/// not a keypad (a real one is tested in the rig's guest, deploy/hil/guest-keypad.sh: this host
/// has no /dev/uinput).
@Suite struct EvdevKeypadTests {
  static let header = "/usr/include/linux/input-event-codes.h"

  /// Every `#define KEY_… <number>` of the header (aliases of other names are skipped).
  static func keyCodes() throws -> [String: UInt16] {
    let text = String(decoding: try readWholeFile(header, maxBytes: 1 << 20), as: UTF8.self)
    var codes: [String: UInt16] = [:]
    for line in text.split(separator: "\n") {
      let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard words.count >= 3, words[0] == "#define", words[1].hasPrefix("KEY_") else { continue }
      let value = words[2]
      let number = value.hasPrefix("0x") ? UInt16(value.dropFirst(2), radix: 16) : UInt16(value)
      if let number { codes[String(words[1])] = number }
    }
    return codes
  }

  @Test("KeypadKey(linuxCode:) maps the header's digits, enter and clear keys, and nothing else")
  func keyMapMatchesTheHeader() throws {
    let codes = try Self.keyCodes()
    #expect(codes["KEY_MAX"] == 0x2ff, "\(Self.header) read wrong: KEY_MAX \(String(describing: codes["KEY_MAX"]))")
    var expected: [UInt16: KeypadKey] = [:]
    func want(_ name: String, _ key: KeypadKey) {
      guard let code = codes[name] else {
        Issue.record("\(name) is not in \(Self.header)")
        return
      }
      expected[code] = key
    }
    for d in 0...9 {
      want("KEY_\(d)", .digit(UInt8(d)))
      want("KEY_KP\(d)", .digit(UInt8(d)))
    }
    for name in ["KEY_ENTER", "KEY_KPENTER"] { want(name, .enter) }
    for name in ["KEY_BACKSPACE", "KEY_ESC", "KEY_KPASTERISK"] { want(name, .clear) }
    #expect(expected.count == 25)
    for code in UInt16(0)...UInt16(0x2ff) {
      #expect(KeypadKey(linuxCode: code) == expected[code], "code \(code)")
    }
    #expect(KeypadKey(linuxCode: 0xffff) == nil)
  }

  @Test("the device's name (from outside: the USB device's) is bounded and has no control characters")
  func printableName() {
    #expect(EvdevKeypad.printable("Acme USB Keypad") == "Acme USB Keypad")
    #expect(EvdevKeypad.printable("a\u{1b}[2Jb\nc\u{202e}d") == "a?[2Jb?c?d")
    #expect(EvdevKeypad.printable(String(repeating: "k", count: 300)).count == EvdevKeypad.nameCharactersMax)
  }

  /// The reason a refused open gives.
  static func refusal(_ path: String) -> String? {
    do {
      _ = try EvdevKeypad(path: path)
      return nil
    } catch { return error.reason }
  }

  @Test("refused with its reason: /dev/null, a directory, a missing path, a FIFO (without blocking)", .timeLimit(.minutes(1)))
  func refusals() throws {
    let dir = temporaryDirectory("keypad")
    defer { removeTree(dir) }
    let fifo = dir + "/fifo"
    #expect(mkfifo(fifo, 0o600) == 0)
    let cases: [(String, String)] = [
      ("/dev/null", "a character device outside the input subsystem: not a keypad"),
      (dir, "a directory, not a character device: not a keypad"),
      (dir + "/missing", "not found"),
      (fifo, "a FIFO (named pipe), not a character device: not a keypad"),
    ]
    for (path, reason) in cases {
      let got = Self.refusal(path)
      #expect(got?.hasPrefix(reason) == true, "\(path): \(got ?? "opened")")
    }
    // The FIFO's open did not wait for a writer, and nothing is left open: a writer finds no reader.
    let fd = open(fifo, O_WRONLY | O_NONBLOCK)
    #expect(fd == -1 && errno == ENXIO, "a reader of the FIFO is still open")
    if fd >= 0 { close(fd) }
  }

  @Test("scangate keypad listen: exit 1 with the reason when the device cannot be opened")
  func listenRefuses() {
    let (status, output) = runCommand([scangateBinary, "keypad", "listen", "--device", "/dev/null", "--seconds", "1"], timeoutSeconds: 30)
    #expect(status == 1, "\(output)")
    #expect(output.contains("/dev/null: a character device outside the input subsystem: not a keypad"), "\(output)")
    let (usage, text) = runCommand([scangateBinary, "keypad", "listen"], timeoutSeconds: 30)
    #expect(usage == 2 && text.contains("--device PATH"), "\(text)")
  }
}

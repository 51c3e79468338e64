import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanTools

/// `scangate keypad listen`: a technician's check of a PIN keypad before the reader uses it. It
/// opens and grabs the device as the reader would (the same refusals), prints its name and then
/// one line per key as the PIN entry sees it, until `--seconds` pass (0: until SIGINT or SIGTERM)
/// or the device is gone. Keys are printed: run it with the reader stopped, never on a keypad in
/// service (a PIN typed meanwhile would be shown).
enum KeypadCommand {
  static func run(_ arguments: [String]) -> Int32 {
    guard arguments.first == "listen" else {
      writeStandardError("scangate keypad: want 'listen' (scangate keypad --help)\n")
      return 2
    }
    let path: String
    let seconds: Int
    do {
      let options = try Options(Array(arguments.dropFirst()), valued: ["device", "seconds"], known: [])
      guard let device = options.value("device"), options.positionals.isEmpty else {
        throw ParseError(message: "listen wants --device PATH (e.g. /dev/input/by-id/…-event-kbd)")
      }
      path = device
      seconds = try options.integer("seconds", default: 0, range: 0...86_400)
    } catch {
      writeStandardError("scangate keypad: \(error)\n")
      return 2
    }
    let keypad: EvdevKeypad
    do { keypad = try EvdevKeypad(path: path) } catch {
      writeStandardError("scangate keypad: \(error)\n")
      return 1
    }
    return listen(keypad, seconds: seconds)
  }

  /// Prints keys until the deadline, a signal, or the device is gone (status 1).
  static func listen(_ keypad: EvdevKeypad, seconds: Int) -> Int32 {
    let signals = (try? syscall("open the signalfd", { sg_signalfd_open() })) ?? -1
    defer { if signals >= 0 { closeDescriptor(signals) } }
    say("keypad: \(keypad.name)")
    let clock = SystemMonotonicClock()
    let end = seconds > 0 ? clock.now().adding(milliseconds: seconds * 1_000) : nil
    var set = [pollfd(fd: keypad.descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: signals, events: Int16(POLLIN), revents: 0)]
    while true {
      let wait = end.map { max(0, $0.milliseconds(since: clock.now())) } ?? 1_000
      if end != nil && wait == 0 { return 0 }
      do { _ = try pollDescriptors(&set, timeoutMilliseconds: min(wait, 1_000)) } catch {
        writeStandardError("scangate keypad: \(error)\n")
        return 1
      }
      if set[1].revents != 0 { return 0 }  // SIGINT, SIGTERM
      guard set[0].revents != 0 else { continue }
      let present = keypad.read { key in say("key " + name(key)) }
      if !present {
        writeStandardError("scangate keypad: \(keypad.path): device gone\n")
        return 1
      }
    }
  }

  static func name(_ key: KeypadKey) -> String {
    switch key {
    case .digit(let d): String(d)
    case .enter: "enter"
    case .clear: "clear"
    }
  }

  /// One line to standard output, unbuffered (a script reads it as it comes).
  static func say(_ line: String) { try? writeAll(STDOUT_FILENO, line + "\n", "write standard output") }
}

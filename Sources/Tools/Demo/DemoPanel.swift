import Glibc
import ScanCore
import ScanLinux
import ScanService

/// `scangate demo --panel`: a simulated access-control panel on the master side of a pty pair,
/// the reader's OSDP port on the other. It polls like a panel (plain OSDP: the demo has no key;
/// a real panel uses Secure Channel, docs/panels.md), prints every card read the reader sends,
/// answers each with LED green and a short beep, and prints the reader's replies.
final class DemoPanel: @unchecked Sendable {
  let master: Int32
  let slavePath: String
  private let worker = WorkerThread()

  init() throws(FileError) {
    (master, slavePath) = try openPseudoTerminal()
  }

  deinit { closeDescriptor(master) }

  static func packet(_ sequence: UInt8, _ command: UInt8, _ data: [UInt8] = []) -> [UInt8] {
    var p: [UInt8] = [0x53, 0, 0, 0, sequence | 0x04, command] + data
    p[2] = UInt8(p.count + 2)
    let c = p.withUnsafeBytes { OSDP.crc16($0) }
    return p + [UInt8(c & 0xFF), UInt8(c >> 8)]
  }

  func start() {
    worker.start { [self] in self.run() }
  }

  func stop() { worker.stop() }

  private func run() {
    var framer = OSDPFramer()
    var sequence: UInt8 = 0
    var buffer = [UInt8](repeating: 0, count: 512)
    var queued: [[UInt8]] = [Self.packet(0, 0x61, [0]), Self.packet(0, 0x62, [0])]
    var firstID = true
    usleep(1_000_000)  // until the reader has opened its side (raw mode): earlier bytes get mangled
    _ = try? readSome(master, into: &buffer)  // what the reader's side sent before raw mode: dropped
    while !worker.stopRequested {
      let command = queued.isEmpty ? Self.packet(sequence, 0x60) : queued.removeFirst()
      var c = command
      c[4] = (c[4] & ~3) | sequence
      c.removeLast(2)
      let crc = c.withUnsafeBytes { OSDP.crc16($0) }
      c += [UInt8(crc & 0xFF), UInt8(crc >> 8)]
      try? writeAll(master, c, "write the panel's command")
      usleep(100_000)
      let n = (try? readSome(master, into: &buffer, "read the reader's reply")) ?? 0  // EAGAIN: no reply yet
      if n > 0 { buffer.withUnsafeBytes { framer.append(UnsafeRawBufferPointer(rebasing: $0[0..<n]), nowMilliseconds: 0) } }
      var answered = false
      while case .packet(let count, _) = framer.next() {
        let reply = Array(UnsafeRawBufferPointer(framer.packet))
        framer.consume()
        answered = true
        guard count >= 7 else { continue }
        switch reply[5] {
        case 0x45 where firstID:
          firstID = false
          print("panel: the reader answered osdp_ID (vendor \(Hex.string(Array(reply[6..<9]))))")
        case 0x46: print("panel: osdp_PDCAP \(count - 8) bytes of capabilities")
        case 0x50:
          let bits = Int(reply[8]) | Int(reply[9]) << 8
          let data = Array(reply[10..<(10 + (bits + 7) / 8)])
          var text = ""
          for i in 0..<bits { text += (data[i / 8] >> (7 - UInt8(i % 8))) & 1 == 1 ? "1" : "0" }
          var value: UInt64 = 0
          for i in 0..<bits { value = value << 1 | UInt64((data[i / 8] >> (7 - UInt8(i % 8))) & 1) }
          var line = "panel: card read \(bits) bits \(text)"
          if bits == 26 { line += " = facility \((value >> 17) & 0xFF), card \((value >> 1) & 0xFFFF) (H10301)" }
          print(line + "; the panel grants: LED green, beep")
          queued.append(Self.packet(0, 0x69, [0, 0, 2, 10, 0, 2, 0, 20, 0, 0, 0, 0, 0, 0]))
          queued.append(Self.packet(0, 0x6A, [0, 2, 2, 0, 1]))
        case 0x41: print("panel: NAK \(reply[6])")
        default: break
        }
        flushStandardOutput()
      }
      if answered { sequence = sequence % 3 + 1 }
    }
  }
}

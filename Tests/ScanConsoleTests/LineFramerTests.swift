import ScanConsole
import ScanCore
import ScanSim
import Testing

/// A byte-level oracle: what the framer must produce for a whole transcript.
enum Framed: Equatable {
  case line([UInt8])
  case overlong(Int)
}

func oracle(_ bytes: [UInt8], capacity: Int) -> [Framed] {
  var out: [Framed] = []
  var current: [UInt8] = []
  var previous: UInt8 = 0
  for b in bytes {
    defer { previous = b }
    if b == 0x0A && previous == 0x0D { continue }  // CRLF is one terminator
    if b == 0x0A || b == 0x0D {
      out.append(current.count > capacity ? .overlong(current.count) : .line(current))
      current = []
    } else {
      current.append(b)
    }
  }
  return out
}

func frame(_ bytes: [UInt8], capacity: Int, chunk: Int) -> [Framed] {
  var framer = LineFramer(capacity: capacity)
  var out: [Framed] = []
  var i = 0
  while i < bytes.count {
    let end = min(bytes.count, i + chunk)
    bytes[i..<end].withUnsafeBytes { raw in
      framer.feed(raw) { output in
        switch output {
        case .line(let l): out.append(.line(Array(l)))
        case .overlong(let n): out.append(.overlong(n))
        }
      }
    }
    i = end
  }
  return out
}

@Suite struct LineFramerTests {
  static let transcript: [UInt8] = {
    var t: [UInt8] = []
    t += Array("STATUS\n".utf8)
    t += Array("watch on\r\n".utf8)
    t += Array(repeating: UInt8(ascii: "A"), count: 512) + [0x0A]  // exactly the limit
    t += Array(repeating: UInt8(ascii: "B"), count: 512) + [0x0D, 0x0A]  // the limit, CRLF
    t += Array(repeating: UInt8(ascii: "C"), count: 513) + [0x0A]  // one over
    t += Array(repeating: UInt8(ascii: "D"), count: 5_000) + [0x0D, 0x0A]
    t += [0x00, 0x01, 0xFF, 0x1B, 0x5B, 0x32, 0x4A, 0x0A]  // NUL, binary, ANSI
    t += Array("\r\n\n".utf8)  // empty lines
    t += Array("CHECK EVIL%0D%0AOK\n".utf8)
    t += Array("partial without end".utf8)
    return t
  }()

  @Test("any chunking gives the oracle's lines", arguments: [1, 2, 3, 7, 64, 511, 512, 513, 4096, 100_000])
  func chunking(chunk: Int) {
    #expect(frame(Self.transcript, capacity: 512, chunk: chunk) == oracle(Self.transcript, capacity: 512))
  }

  @Test("an overlong line is reported whole, never cut into a command, and the next line is intact")
  func overlong() {
    let evil = Array(repeating: UInt8(ascii: "x"), count: 600) + Array("OPEN\nSTATUS\n".utf8)
    #expect(frame(evil, capacity: 512, chunk: 7) == [.overlong(604), .line(Array("STATUS".utf8))])
  }

  @Test("a bare CR ends a line, as picocom and screen send on Enter; CRLF split across reads is one end")
  func bareCarriageReturn() {
    #expect(
      frame(Array("STATUS\rLAST\r".utf8), capacity: 512, chunk: 3)
        == [.line(Array("STATUS".utf8)), .line(Array("LAST".utf8))])
    #expect(
      frame(Array("STATUS\r\nLAST\r\n".utf8), capacity: 512, chunk: 7)
        == [.line(Array("STATUS".utf8)), .line(Array("LAST".utf8))])
    #expect(
      frame(Array("A\r\r\nB\n\rC\r".utf8), capacity: 512, chunk: 1)
        == [.line([0x41]), .line([]), .line([0x42]), .line([]), .line([0x43])])
  }

  @Test("random transcripts match the oracle", arguments: 0..<20)
  func random(seed: Int) {
    var rng = SplitMix(seed: UInt64(seed))
    let pieces: [[UInt8]] = [Array("OK".utf8), [0x0D], [0x0A], [0x0D, 0x0A], [0], Array(repeating: 0x41, count: 300), [0xFF]]
    var bytes: [UInt8] = []
    for _ in 0..<200 { bytes += pieces[Int(rng.next() % UInt64(pieces.count))] }
    let chunk = Int(rng.next() % 50) + 1
    #expect(frame(bytes, capacity: 512, chunk: chunk) == oracle(bytes, capacity: 512))
  }
}

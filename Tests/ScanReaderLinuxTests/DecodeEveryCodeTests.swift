import Glibc
import ScanLinux
import ScanService
import ScanTestSupport
import Testing

/// `scangate decode` on an image holding more codes than its old silent cap of 16 (issue 28: the
/// BoofCV "lots" photos hold 60 each): every code located is reported unless `--results` says
/// fewer, and a cap says how many it dropped.
@Suite struct DecodeEveryCodeTests {
  /// 24 codes (libqrencode, 3 px a module) on a 6 × 4 grid of a 640×480 frame, as a PNG.
  static func sheet(in dir: String) -> (path: String, payloads: Set<String>) {
    var pixels = [UInt8](repeating: 235, count: 640 * 480)
    var payloads = Set<String>()
    for row in 0..<4 {
      for column in 0..<6 {
        let payload = "SHEET-\(row)-\(column)"
        let code = renderQRCode(Array(payload.utf8), scale: 3)!
        let ox = column * 106 + (106 - code.width) / 2, oy = row * 120 + (120 - code.height) / 2
        for y in 0..<code.height { for x in 0..<code.width { pixels[(y + oy) * 640 + x + ox] = code.pixels[y * code.width + x] } }
        payloads.insert(payload)
      }
    }
    let path = dir + "/sheet.png"
    _ = writePNG(path: path, pixels: pixels, width: 640, height: 480, components: 1)
    return (path, payloads)
  }

  @Test("24 codes in one image: all 24 reported; --results 16 shows 16 and says 8 were dropped")
  func everyCode() {
    let dir = temporaryDirectory("sheet")
    defer { removeTree(dir) }
    let (path, payloads) = Self.sheet(in: dir)
    let (status, output) = runCommand([scangateBinary, "decode", "--formats", "qr", path])
    #expect(status == 0, "\(output)")
    let lines = output.split(separator: "\n").map(String.init)
    let read = Set(lines.compactMap { $0.split(separator: " ").last.map(String.init) }.filter { $0.hasPrefix("SHEET-") })
    #expect(read == payloads, "read \(read.count) of 24: \(output)")
    #expect(!output.contains("dropped"), "\(output)")

    let (cappedStatus, capped) = runCommand([scangateBinary, "decode", "--formats", "qr", "--results", "16", path])
    #expect(cappedStatus == 0)
    let shown = capped.split(separator: "\n").filter { $0.contains("SHEET-") && !$0.contains("dropped") }
    #expect(shown.count == 16, "\(capped)")
    #expect(capped.contains("\(path): 24 codes located, 16 shown (--results 16), 8 dropped"), "\(capped)")

    let (_, json) = runCommand([scangateBinary, "decode", "--formats", "qr", "--results", "16", "--json", path])
    #expect(json.split(separator: "\n").filter { $0.contains("\"text\":\"SHEET-") }.count == 16, "\(json)")
    #expect(json.contains("\"located\":24,\"shown\":16,\"dropped\":8,\"limit_reached\":false"), "\(json)")
  }
}

import ScanTestSupport
import Testing

/// `scangate demo` at the frame rates a door camera runs at: what the reader reads must not
/// depend on the frame rate (issue 28: at the demo's own 15 fps, dave's dark-mode phone was
/// announced and never decided, while 30 and 60 fps granted it).
@Suite(.serialized) struct DemoFrameRateTests {
  @Test("scangate demo grants dave's dark-mode phone (light on dark) at 5, 10, 15 and 30 fps", arguments: [5, 10, 15, 30])
  func darkModePhone(fps: Int) {
    // The demo up to the end of dave's scene: an empty second, then alice's, mallory's and
    // dave's codes, each 0.6 s in view and followed by an empty second (DemoCommand.writeScenes).
    let codeFrames = max(3, fps * 6 / 10), gapFrames = max(2, fps)
    let frames = gapFrames + 3 * (codeFrames + gapFrames)
    let (status, output) = runCommand([scangateBinary, "demo", "--port", "0", "--fps", "\(fps)", "--frames", "\(frames)"], timeoutSeconds: 120)
    #expect(status == 0, "\(output)")
    #expect(output.contains("summary: \(frames) frames"), "\(output)")
    let decisions = output.split(separator: "\n").filter { $0.contains(" decision ") }
    // What the reader did with the frames (skipped, dropped, abandoned, masked), so that a miss
    // on a loaded machine says why.
    let how = output.split(separator: "\n").filter { $0.hasPrefix("summary") || $0.hasPrefix("decoder") || $0.contains("pattern") }
    #expect(
      decisions.contains { $0.contains("decision granted qr") && $0.contains("label=dave payload=DAVE-0004") }, "\(fps) fps: \(decisions) \(how)")
    #expect(decisions.contains { $0.contains("label=alice payload=ALICE-0001") }, "\(fps) fps: \(decisions)")
    #expect(decisions.contains { $0.contains("payload=MALLORY-9999") }, "\(fps) fps: \(decisions)")
  }
}

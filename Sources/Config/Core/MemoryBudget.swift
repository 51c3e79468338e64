import ScanAccess
import ScanBase
import ScanReader

/// What the reader allocates at startup, line by line: each owner says what it allocates for
/// the configuration (the console's owner lives in ScanConsoleLinux and adds its line there).
public struct MemoryBudget: Sendable {
  public var lines: [(name: String, bytes: Int)]
  public var totalBytes: Int { lines.reduce(0) { $0 + $1.bytes } }

  /// The MJPEG decoder's arena for a frame `width` pixels wide: libjpeg's per-frame memory grows
  /// with the width (its row buffers); 640×480 4:2:2 frames use 21.6 KiB of this 104 KiB.
  public static func mjpegArenaBytes(width: Int) -> Int { (64 << 10) + 64 * max(width, 0) }

  public init(_ c: ScanConfig) {
    let frame = c.camera.width * c.camera.height
    let e = c.engine
    // Each camera has its own buffers, gray plane and MJPEG arena (`camera.second`: two).
    let cameras = c.camera.second.isEmpty ? 1 : 2
    let each = cameras == 1 ? "" : " × 2 cameras"
    var lines = [
      (
        "camera buffers (driver mmap, \(c.camera.format.bufferCase))" + each,
        cameras * c.camera.buffers * frame * c.camera.format.bufferBytesPerPixel
      ),
      ("gray plane (MJPEG decode target)" + each, cameras * frame),
      ("MJPEG decoder arena (libjpeg's per-frame memory)" + each, cameras * Self.mjpegArenaBytes(width: c.camera.width)),
      (
        "decoder scratch plane (the strategy's largest view)",
        DecodePipeline<NoDecoder>.bytes(maxWidth: c.camera.width, maxHeight: c.camera.height, attempts: e.decode.attempts)
      ),
      ("decoder C++ arena", c.decoder.arenaKiB * 1024),
      (
        "result slots (\(e.resultsCapacity) × \(e.payloadBytesMax) B × payload+text)",
        DecodeResults.bytes(capacity: e.resultsCapacity, payloadBytesMax: e.payloadBytesMax)
      ),
      ("allow-list tables (live + spare, \(e.allowList.entriesMax) entries)", 2 * AllowListTable.bytes(entriesMax: e.allowList.entriesMax)),
      ("presence slots (\(e.presenceSlots))", PresenceTracker.bytes(capacity: e.presenceSlots)),
      (
        "event ring (\(EventRing.roundedCapacity(c.eventRingCapacity)) × \(MemoryLayout<ScanEvent>.stride) B)",
        EventRing.bytes(capacity: c.eventRingCapacity)
      ),
    ]
    if c.credentials.enabled {
      lines.append(
        ("signed credentials (message, replay cache of \(c.credentials.replayCacheEntries))", CredentialVerifier.bytes(c.credentials)))
    }
    self.lines = lines
  }
}

/// A decoder type for asking `DecodePipeline` its size without one.
public struct NoDecoder: CodeDecoder {
  public mutating func decode(_ view: LumaFrame, formats: BarcodeFormats, into results: inout DecodeResults) {}
}

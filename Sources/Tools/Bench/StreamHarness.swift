import ScanCore
import ScanLinux
import ScanService

/// `scangate decode --frames N FILES...`: the reader's way on files. One pipeline for all of them
/// (sized for the largest), each image shown to it for N consecutive frames in `alternate` mode
/// within the per-frame budget (`--budget-ms`, default the reader's), as a camera would show a
/// held code; codes found in any of the N frames are printed once each (by payload and place),
/// and standard error gets the CPU per frame and the frame each image was first read on. Frames
/// come as fast as the decoder takes them, but the pipeline's clock moves on by a frame period
/// (`fps`) per frame as well, so time-based behaviour (quiet frames) sees a camera's pace.
enum StreamHarness {
  /// The real monotonic clock, plus a frame period per frame shown.
  final class StreamClock: MonotonicClock {
    let system = SystemMonotonicClock()
    let base: UInt64
    var offsetNanoseconds: UInt64 = 0
    init() { base = system.now().nanoseconds }
    func now() -> Instant { Instant(nanoseconds: system.now().nanoseconds &+ offsetNanoseconds) }
    /// Frame `k` arrives at `k` periods after the start (later if the previous one ran over).
    func frame(_ k: UInt64, periodNanoseconds: UInt64) {
      let target = base + k * periodNanoseconds, real = system.now().nanoseconds
      if target > real { offsetNanoseconds = max(offsetNanoseconds, target - real) }
    }
  }

  static func run(
    _ paths: [String], frames: Int, fps: Int, json: Bool, settings: DecodeSettings, reader: ImageFileReader, capacity: Int
  ) throws(ParseError) -> Int32 {
    let (maxWidth, maxHeight) = largestSize(paths, reader: reader)
    let decoder: ZXingDecoder
    // The reader's arena (its default size), so the engine's allocations cost what they do there.
    do { decoder = try ZXingDecoder(arenaBytes: ScanConfig().decoder.arenaKiB * 1024, capacity: capacity, tryHarder: settings.tryHarder) } catch {
      throw ParseError(message: "\(error)")
    }
    var pipeline = DecodePipeline(decoder: decoder, settings: settings, maxWidth: maxWidth, maxHeight: maxHeight)
    var results = DecodeResults(capacity: capacity, payloadBytesMax: 8192)
    let clock = StreamClock()
    var perFrame: [Double] = []
    var firstRead: [Double] = []
    var sequence: UInt64 = 0
    var quietTimes: [Double] = []
    var status: Int32 = 0
    for path in paths {
      let image: GrayImage
      do { image = try reader.read(path) } catch {
        writeStandardError("scangate decode: \(error)\n")
        status = 1
        continue
      }
      // Codes already printed for this image: payload and bounding box.
      var seen: [Seen] = []
      var first: Int? = nil
      for f in 0..<frames {
        sequence &+= 1
        clock.frame(sequence, periodNanoseconds: 1_000_000_000 / UInt64(fps))
        let start = clock.now()
        image.withFrame(sequence: sequence, captured: start) { pipeline.decode($0, into: &results, clock: clock) }
        perFrame.append(Double(clock.now().microseconds(since: start)))
        if pipeline.lastFrame.quiet { quietTimes.append(perFrame[perFrame.count - 1]) }
        if printNewCodes(results, path: path, frame: f + 1, json: json, seen: &seen) && first == nil { first = f + 1 }
      }
      if let first { firstRead.append(Double(first)) }
      if seen.isEmpty { print(json ? "{\"file\":\(jsonString(path)),\"codes\":0}" : "\(path): no code found") }
    }
    report(
      images: paths.count, frames: frames, fps: fps, settings: settings, perFrame: perFrame, quietTimes: quietTimes,
      firstRead: firstRead)
    return status
  }

  /// A code already printed for an image: its payload and bounding box.
  typealias Seen = (text: [UInt8], minX: Int, minY: Int, maxX: Int, maxY: Int)

  /// The largest image's size (1×1 at least): it sizes the pipeline, as a camera's mode does.
  static func largestSize(_ paths: [String], reader: ImageFileReader) -> (width: Int, height: Int) {
    var maxWidth = 1, maxHeight = 1
    for path in paths {
      guard let image = try? reader.read(path) else { continue }
      maxWidth = max(maxWidth, image.width)
      maxHeight = max(maxHeight, image.height)
    }
    return (maxWidth, maxHeight)
  }

  /// Prints each code of `results` not yet in `seen` (by payload and place) and adds it there;
  /// returns whether there was one.
  static func printNewCodes(_ results: borrowing DecodeResults, path: String, frame: Int, json: Bool, seen: inout [Seen]) -> Bool {
    var printed = false
    for i in 0..<results.count {
      let b = cornerBounds(results[i].corners)
      let cx = (b.minX + b.maxX) / 2, cy = (b.minY + b.maxY) / 2
      let text = Array(results.payload(i))
      if seen.contains(where: { $0.text == text && cx >= $0.minX && cx <= $0.maxX && cy >= $0.minY && cy <= $0.maxY }) {
        continue
      }
      seen.append((text, b.minX, b.minY, b.maxX, b.maxY))
      printed = true
      if json {
        var line = DecodeCommand.jsonLine(path, results, i)
        line.removeLast()
        print(line + ",\"frame\":\(frame)}")
      } else {
        print(DecodeCommand.textLine(path, results, i) + " [frame \(frame)]")
      }
    }
    return printed
  }

  /// The summary on standard error: CPU per frame (and per quiet frame), the frame each image
  /// was first read on.
  static func report(
    images: Int, frames: Int, fps: Int, settings: DecodeSettings, perFrame: [Double], quietTimes: [Double], firstRead: [Double]
  ) {
    // Quantiles and means of the recorded values (0 for none); the p50s match the harnesses' median.
    func quantile(_ values: [Double], _ q: Double) -> Int {
      let sorted = values.sorted()
      return sorted.isEmpty ? 0 : Int(sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))])
    }
    func mean(_ values: [Double]) -> Int { values.isEmpty ? 0 : Int(values.reduce(0, +) / Double(values.count)) }
    writeStandardError(
      "stream: \(images) images × \(frames) frames at \(fps) fps, budget \(settings.budgetMicroseconds / 1000) ms, "
        + "quiet after \(settings.quietAfterMicroseconds / 1000) ms (\(quietTimes.count) quiet frames, "
        + "µs p50 \(Int(median(quietTimes))) mean \(mean(quietTimes))): "
        + "per-frame decode µs p50 \(quantile(perFrame, 0.5)) p90 \(quantile(perFrame, 0.9)) p99 \(quantile(perFrame, 0.99)) "
        + "mean \(mean(perFrame)); images read \(firstRead.count), first read at frame p50 \(Int(median(firstRead))) "
        + "p90 \(quantile(firstRead, 0.9)); last attempt: \(settings.attempts.last?.name ?? "-")\n")
  }
}

import Glibc
import ScanCore
import ScanLinux
import ScanService

/// `scangate decode`: barcodes in image files, and the accuracy harness (`--expect DIR`).
public enum DecodeCommand {
  static let imageExtensions: Set<String> = ["png", "jpg", "jpeg", "gif", "pgm", "ppm", "pnm", "bmp"]
  /// Codes one decode call can report: zxing-cpp counts them in a byte. `scangate decode` keeps
  /// room for that many, so it reports every code the engine locates unless `--results` says
  /// fewer.
  static let engineSymbolsMax = 255

  public static func run(_ arguments: [String]) -> Int32 {
    do {
      let options = try Options(
        arguments,
        valued: [
          "formats", "expect", "locations", "variant", "variants", "size", "max-pixels", "results", "strategy", "budget-ms", "frames", "fps", "quiet-after-ms",
          "scenes", "hold-ms", "gap-ms",
        ],
        known: ["json", "fast", "each-attempt", "trace"])
      var settings = DecodeSettings()
      settings.formats = try BarcodeFormats.parse(options.value("formats") ?? "all")
      settings.tryHarder = !options.flag("fast")
      if let mode = options.value("variants") {
        guard let m = VariantMode(rawValue: mode) else {
          throw ParseError(message: "--variants is one of upright, retry, alternate")
        }
        settings.variantMode = m
      }
      let sizeWidth = options.value("size").flatMap { Int($0.split(separator: "x").first ?? "") } ?? 1280
      settings.attempts = try strategy(options.value("strategy") ?? "default", width: sizeWidth)
      let frames = try options.integer("frames", default: 0, range: 0...10_000)
      // A stream (--frames) is the reader's: `alternate` within its budget, unless --variants
      // says otherwise (`retry`: every attempt on every frame, no budget); a still image, none.
      if frames > 0 && options.value("variants") == nil { settings.variantMode = .alternate }
      let streamBudget = frames > 0 && settings.variantMode == .alternate ? ScanConfig.decodeBudgetMillisecondsDefault : 0
      settings.budgetMicroseconds = try options.integer("budget-ms", default: streamBudget, range: 0...10_000) * 1000
      let reader = ImageFileReader(
        maxPixels: try options.integer("max-pixels", default: 40_000_000, range: 1...400_000_000))
      // Every code located, unless --results caps what is shown (a cap says what it dropped).
      let shown = options.value("results") == nil ? nil : try options.integer("results", default: engineSymbolsMax, range: 1...engineSymbolsMax)
      let capacity = engineSymbolsMax
      if let directory = options.value("locations") {
        let variant = options.value("variant") ?? "upright"
        guard ["upright", "inverted", "mirrored"].contains(variant) else {
          throw ParseError(message: "--variant is one of upright, inverted, mirrored")
        }
        if options.flag("each-attempt") {
          return try LocationHarness.eachAttempt(directory: directory, settings: settings, variant: variant, reader: reader)
        }
        return try LocationHarness.run(directory: directory, settings: settings, variant: variant, reader: reader)
      }
      if let directory = options.value("expect") {
        return try expect(directory: directory, options: options, settings: settings, reader: reader)
      }
      if let directory = options.value("scenes") {
        return try scenes(directory: directory, options: options, reader: reader)
      }
      guard !options.positionals.isEmpty else { throw ParseError(message: "no image files given") }
      if frames > 0 {
        settings.quietAfterMicroseconds =
          try options.integer("quiet-after-ms", default: ScanConfig.quietAfterMillisecondsDefault, range: 0...60_000) * 1000
        let fps = try options.integer("fps", default: 30, range: 1...1_000)
        return try StreamHarness.run(
          options.positionals, frames: frames, fps: fps, json: options.flag("json"), settings: settings, reader: reader, capacity: capacity)
      }
      return decodeFiles(
        options.positionals, json: options.flag("json"), settings: settings,
        reader: reader, capacity: capacity, shown: shown)
    } catch {
      writeStandardError("scangate decode: \(error)\n")
      return 2
    }
  }

  /// `--strategy`: `default` (the reader's), `large` (a reader's at a camera mode `width` wide:
  /// 1280×720 and up), `none` (the variant views only), or attempts separated by commas, e.g.
  /// "x1,x2 histogram,/2 inverted".
  static func strategy(_ text: String, width: Int = 1280) throws(ParseError) -> [DecodeAttempt] {
    if text == "default" { return DecodeAttempt.readerDefault }
    // "default:N": the reader's order cut after its first N attempts (the strategy's steps).
    if text.hasPrefix("default:"), let n = Int(text.dropFirst(8)), n >= 1, n <= DecodeAttempt.readerDefault.count {
      return Array(DecodeAttempt.readerDefault.prefix(n))
    }
    if text == "large" { return DecodeAttempt.readerLarge(width: width) }
    if text == "none" { return [] }
    var out: [DecodeAttempt] = []
    for part in text.split(separator: ",") {
      guard let a = DecodeAttempt(parsing: String(part)) else {
        throw ParseError(message: "--strategy: cannot read attempt \"\(part)\" (scale x1 x2 /2../8, variant, binarizer local histogram fixed, tracked)")
      }
      out.append(a)
    }
    guard !out.isEmpty, out.count <= 16 else { throw ParseError(message: "--strategy takes 1 to 16 attempts") }
    return out
  }

  /// Decodes one image with a fresh pipeline sized for it; `body` gets the results and the
  /// milliseconds the decode took (the harnesses time the decode call only).
  static func decode(
    _ image: GrayImage, settings: DecodeSettings, capacity: Int,
    _ body: (borrowing DecodeResults, Double) throws(ParseError) -> Void
  ) throws(ParseError) {
    let decoder: ZXingDecoder
    do { decoder = try ZXingDecoder(arenaBytes: 0, capacity: capacity, tryHarder: settings.tryHarder) } catch {
      throw ParseError(message: "\(error)")
    }
    var pipeline = DecodePipeline(decoder: decoder, settings: settings, maxWidth: image.width, maxHeight: image.height)
    var results = DecodeResults(capacity: capacity, payloadBytesMax: 8192)
    let clock = SystemMonotonicClock()
    let start = clock.now()
    image.withFrame { pipeline.decode($0, into: &results) }
    try body(results, Double(clock.now().microseconds(since: start)) / 1000)
  }

  /// Applies a harness variant ("inverted", "mirrored", anything else: as is).
  static func transformed(_ image: GrayImage, _ variant: String) -> GrayImage {
    variant == "inverted" ? image.inverted() : variant == "mirrored" ? image.mirrored() : image
  }

  /// Decodes each file and prints every code located, or the first `shown` of them and how
  /// many were dropped.
  static func decodeFiles(
    _ paths: [String], json: Bool, settings: DecodeSettings, reader: ImageFileReader, capacity: Int, shown: Int? = nil
  ) -> Int32 {
    var status: Int32 = 0
    for path in paths {
      let image: GrayImage
      do { image = try reader.read(path) } catch {
        writeStandardError("scangate decode: \(error)\n")
        if json { print("{\"file\":\(jsonString(path)),\"error\":\(jsonString(error.reason))}") }
        status = 1
        continue
      }
      try? decode(image, settings: settings, capacity: capacity) { results, _ in
        if results.count == 0 {
          print(json ? "{\"file\":\(jsonString(path)),\"codes\":0}" : "\(path): no code found")
        }
        let printed = min(results.count, shown ?? results.count)
        for i in 0..<printed {
          print(json ? jsonLine(path, results, i) : textLine(path, results, i))
        }
        if let note = droppedNote(path, located: results.count, shown: printed, capacity: capacity, json: json) { print(note) }
      }
    }
    return status
  }

  /// The line saying what a cap left out (nil: nothing was): `--results` below the codes located,
  /// or the engine's own limit reached (there may be more codes in the image).
  static func droppedNote(_ path: String, located: Int, shown: Int, capacity: Int, json: Bool) -> String? {
    let full = located >= capacity
    guard shown < located || full else { return nil }
    let limit = "the engine's limit of \(capacity) codes an image was reached: there may be more"
    if json {
      return "{\"file\":\(jsonString(path)),\"located\":\(located),\"shown\":\(shown),\"dropped\":\(located - shown)"
        + ",\"limit_reached\":\(full)}"
    }
    guard shown < located else { return "\(path): \(limit)" }
    return "\(path): \(located) codes located, \(shown) shown (--results \(shown)), \(located - shown) dropped" + (full ? "; " + limit : "")
  }

  static func textLine(_ path: String, _ results: borrowing DecodeResults, _ i: Int) -> String {
    let symbol = results[i]
    let payload = results.payload(i)
    var line = "\(path): \(symbol.format.name) \(PayloadKind.classify(payload).name) "
    line += PayloadEscaping.escaped(payload)
    if symbol.variant != .upright { line += " [\(symbol.variant.name)]" }
    if symbol.truncated { line += " [truncated]" }
    return line
  }

  static func jsonLine(_ path: String, _ results: borrowing DecodeResults, _ i: Int) -> String {
    let symbol = results[i]
    let payload = results.payload(i)
    let kind = PayloadKind.classify(payload)
    let text = String(decoding: results.text(i), as: UTF8.self)
    var corners: [String] = []
    for k in 0..<8 { corners.append(String(symbol.corners[k])) }
    var line = "{\"file\":\(jsonString(path)),\"format\":\"\(symbol.format.name)\",\"kind\":\"\(kind.name)\""
    line += ",\"text\":\(jsonString(text)),\"escaped\":\(jsonString(PayloadEscaping.escaped(payload)))"
    line += ",\"bytes_hex\":\"\(Hex.string(payload))\",\"corners\":[\(corners.joined(separator: ","))]"
    line += ",\"orientation\":\(symbol.orientationDegrees),\"inverted\":\(symbol.variant.isInverted)"
    line += ",\"mirrored\":\(symbol.variant.isMirrored != symbol.engineMirrored),\"truncated\":\(symbol.truncated)"
    if kind == .wifi, let wifi = WiFiCredentials(text) {
      line += ",\"wifi\":{\"ssid\":\(jsonString(wifi.ssid)),\"security\":\(jsonString(wifi.security)),\"hidden\":\(wifi.hidden)}"
    }
    return line + "}"
  }

  // MARK: - Scenes

  /// `--scenes DIR`: each image with an expected payload (.txt/.bin, as `--expect` reads them;
  /// subfolders too) shown to the reader's engine as a code held up at a door: `--gap-ms` of an
  /// empty view, then the image for `--hold-ms`, at `--fps`, fitted to `--size` (default
  /// 640x480) and turned by `--variant`. Prints the time from each code's first frame to the
  /// edge of its decision (SceneHarness), and how many were decided within a second.
  static func scenes(directory: String, options: Options, reader: ImageFileReader) throws(ParseError) -> Int32 {
    let variant = options.value("variant") ?? "upright"
    guard ["upright", "inverted", "mirrored"].contains(variant) else {
      throw ParseError(message: "--variant is one of upright, inverted, mirrored")
    }
    let parts = (options.value("size") ?? "640x480").split(separator: "x").compactMap { Int($0) }
    guard parts.count == 2, parts[0] >= 96, parts[1] >= 96 else { throw ParseError(message: "--size is WxH, e.g. 640x480") }
    let (width, height) = (parts[0], parts[1])
    let fps = try options.integer("fps", default: 15, range: 1...240)
    let hold = try options.integer("hold-ms", default: 1_000, range: 1...60_000)
    let gap = try options.integer("gap-ms", default: 1_000, range: 1...60_000)
    var engine = ScanConfig().engine
    engine.decode.formats = try BarcodeFormats.parse(options.value("formats") ?? "qr")
    if let text = options.value("strategy") { engine.decode.attempts = try strategy(text, width: width) }
    if options.value("budget-ms") != nil {
      engine.decode.budgetMicroseconds = try options.integer("budget-ms", default: 8, range: 0...10_000) * 1000
    }
    var sets: [String] = []
    if !samples(in: directory).isEmpty { sets.append(directory) }
    if let names = try? listDirectory(directory) {
      for name in names.sorted() where isDirectory(directory + "/" + name) { sets.append(directory + "/" + name) }
    }
    var scenes: [SceneHarness.Scene] = []
    for set in sets {
      for sample in samples(in: set).sorted(by: { $0.image < $1.image }) where !sample.expected.isEmpty {
        guard let image = try? reader.read(sample.image) else { continue }
        let frame = transformed(image.fitted(width: width, height: height), variant)
        scenes.append(SceneHarness.Scene(name: sample.image, frame: frame.pixels, payloads: [sample.expected]))
      }
    }
    guard !scenes.isEmpty else { throw ParseError(message: "no images with expected .txt/.bin under \(directory)") }
    let (outcomes, figures) = try SceneHarness.play(
      scenes, width: width, height: height, empty: DemoCommand.background(width: width, height: height), fps: fps,
      holdMilliseconds: hold, gapMilliseconds: gap, settings: engine, trace: options.flag("trace"))
    SceneHarness.report(outcomes, figures, fps: fps, budgetMicroseconds: engine.decode.budgetMicroseconds, each: options.flag("trace"))
    return 0
  }

  // MARK: - Accuracy harness

  /// One image with its expected payload.
  struct Sample {
    var image: String
    var expected: [UInt8]
    var isText: Bool
  }

  /// Per-set outcome of the harness.
  struct SetResult {
    var name: String
    var passed = 0
    var total = 0
    var unreadable = 0
    var falsePositives = 0
    var milliseconds: [Double] = []
  }

  static func samples(in directory: String) -> [Sample] {
    guard let names = try? listDirectory(directory) else { return [] }
    var out: [Sample] = []
    for name in names {
      guard let dot = name.lastIndex(of: "."), imageExtensions.contains(name[name.index(after: dot)...].lowercased())
      else { continue }
      let stem = String(name[..<dot])
      let base = directory + "/" + stem
      if let bin = try? readWholeFile(base + ".bin", maxBytes: 1 << 20) {
        out.append(Sample(image: directory + "/" + name, expected: bin, isText: false))
      } else if let txt = try? readWholeFile(base + ".txt", maxBytes: 1 << 20) {
        out.append(Sample(image: directory + "/" + name, expected: txt, isText: true))
      } else {
        out.append(Sample(image: directory + "/" + name, expected: [], isText: true))  // expects no code
      }
    }
    return out
  }

  static func expect(
    directory: String, options: Options, settings: DecodeSettings, reader: ImageFileReader
  ) throws(ParseError) -> Int32 {
    let variant = options.value("variant") ?? "upright"
    guard ["upright", "inverted", "mirrored"].contains(variant) else {
      throw ParseError(message: "--variant is one of upright, inverted, mirrored")
    }
    var size: (Int, Int)? = nil
    if let text = options.value("size") {
      let parts = text.split(separator: "x").compactMap { Int($0) }
      guard parts.count == 2, parts[0] > 0, parts[1] > 0 else { throw ParseError(message: "--size is WxH, e.g. 640x480") }
      size = (parts[0], parts[1])
    }
    var sets: [String] = []
    if !samples(in: directory).isEmpty { sets.append(directory) }
    if let names = try? listDirectory(directory) {
      for name in names where isDirectory(directory + "/" + name) { sets.append(directory + "/" + name) }
    }
    guard !sets.isEmpty else { throw ParseError(message: "no images with expected .txt/.bin under \(directory)") }
    var all: [SetResult] = []
    print("set                      passed / total   rate     median ms  (variant \(variant), formats \(settings.formats.listDescription))")
    for set in sets {
      let name = set == directory ? "." : String(set.dropFirst(directory.count + 1))
      var result = SetResult(name: name)
      for sample in samples(in: set) {
        guard var image = try? reader.read(sample.image) else { result.unreadable += 1; continue }
        if let (w, h) = size { image = image.fitted(width: w, height: h) }
        image = transformed(image, variant)
        try decode(image, settings: settings, capacity: engineSymbolsMax) { results, ms in
          result.milliseconds.append(ms)
          if sample.expected.isEmpty {
            // No ground truth: only the false-positive sets say "there is no code here".
            if name.hasPrefix("falsepositives") { result.falsePositives += results.count }
            return
          }
          result.total += 1
          var hit = false
          for i in 0..<results.count {
            let got = sample.isText ? results.text(i) : results.payload(i)
            if sample.expected.withUnsafeBytes({ bytesEqual(got, $0) }) { hit = true }
          }
          if hit { result.passed += 1 }
        }
      }
      let label = name.padding(toLength: 24)
      let counts = "\(result.passed) / \(result.total)".padding(toLength: 16, left: true)
      var line = "\(label) \(counts)   \(formatPercent(result.passed, result.total).padding(toLength: 6, left: true))"
      line += "   \(formatMilliseconds(median(result.milliseconds)).padding(toLength: 8, left: true))"
      if result.falsePositives > 0 { line += "   false positives: \(result.falsePositives)" }
      if result.unreadable > 0 { line += "   unreadable files: \(result.unreadable)" }
      print(line)
      flushStandardOutput()
      all.append(result)
    }
    let passed = all.reduce(0) { $0 + $1.passed }, total = all.reduce(0) { $0 + $1.total }
    let times = all.flatMap(\.milliseconds)
    print(
      "TOTAL".padding(toLength: 24) + " " + "\(passed) / \(total)".padding(toLength: 16, left: true)
        + "   " + formatPercent(passed, total).padding(toLength: 6, left: true)
        + "   " + formatMilliseconds(median(times)).padding(toLength: 8, left: true)
        + "   false positives: \(all.reduce(0) { $0 + $1.falsePositives })")
    return 0
  }
}

extension String {
  /// Pads with spaces to `length` (on the left when `left`); never truncates.
  public func padding(toLength length: Int, left: Bool = false) -> String {
    count >= length
      ? self
      : (left
        ? String(repeating: " ", count: length - count) + self
        : self + String(repeating: " ", count: length - count))
  }
}

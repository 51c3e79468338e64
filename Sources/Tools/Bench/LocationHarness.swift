import ScanCore
import ScanLinux
import ScanService

/// `scangate decode --locations DIR`: the accuracy harness for a corpus laid out like the BoofCV QR
/// benchmark (one folder per category; `imageNNN.txt` lists, after a `SETS` line, each code's four
/// corners). A decoded code counts when its corner polygon overlaps a labelled one with
/// intersection-over-union above 0.1, each label matched at most once; unmatched results are
/// false positives.
enum LocationHarness {
  typealias Point = (x: Double, y: Double)

  static func run(directory: String, settings: DecodeSettings, variant: String, reader: ImageFileReader) throws(ParseError) -> Int32 {
    guard let categories = try? listDirectory(directory).filter({ isDirectory(directory + "/" + $0) }), !categories.isEmpty else {
      throw ParseError(message: "no category folders under \(directory)")
    }
    var totalFound = 0, totalLabelled = 0, totalFalse = 0
    var allTimes: [Double] = []
    print("category                 found / labelled   rate     median ms  (variant \(variant), formats \(settings.formats.listDescription))")
    for category in categories {
      let folder = directory + "/" + category
      var found = 0, labelled = 0, falsePositives = 0
      var times: [Double] = []
      try forEachLabelledImage(in: folder, settings: settings, variant: variant, reader: reader) { _, polygons, results, ms in
        times.append(ms)
        labelled += polygons.count
        for i in 0..<results.count {
          let c = results[i].corners
          let detected: [Point] = (0..<4).map { (Double(c[2 * $0]), Double(c[2 * $0 + 1])) }
          if let match = polygons.firstIndex(where: { intersectionOverUnion(detected, $0) > 0.1 }) {
            found += 1
            polygons.remove(at: match)
          } else {
            falsePositives += 1
          }
        }
      }
      totalFound += found; totalLabelled += labelled; totalFalse += falsePositives
      allTimes += times
      print(
        category.padding(toLength: 24) + " " + "\(found) / \(labelled)".padding(toLength: 16, left: true)
          + "   " + formatPercent(found, labelled).padding(toLength: 6, left: true)
          + "   " + formatMilliseconds(median(times)).padding(toLength: 8, left: true)
          + (falsePositives > 0 ? "   false positives: \(falsePositives)" : ""))
      flushStandardOutput()
    }
    print(
      "TOTAL".padding(toLength: 24) + " " + "\(totalFound) / \(totalLabelled)".padding(toLength: 16, left: true)
        + "   " + formatPercent(totalFound, totalLabelled).padding(toLength: 6, left: true)
        + "   " + formatMilliseconds(median(allTimes)).padding(toLength: 8, left: true) + "   false positives: \(totalFalse)")
    return 0
  }

  /// One category's outcome: the labels found (as "image#label"), labels, false positives and
  /// the decode time of each image.
  struct Score {
    var found: Set<String> = []
    var labelled = 0
    var falsePositives = 0
    var milliseconds: [Double] = []
  }

  static func score(folder: String, settings: DecodeSettings, variant: String, reader: ImageFileReader) throws(ParseError) -> Score {
    var out = Score()
    try forEachLabelledImage(in: folder, settings: settings, variant: variant, reader: reader) { stem, polygons, results, ms in
      out.milliseconds.append(ms)
      var free = Array(polygons.indices)
      out.labelled += polygons.count
      for i in 0..<results.count {
        let c = results[i].corners
        let detected: [Point] = (0..<4).map { (Double(c[2 * $0]), Double(c[2 * $0 + 1])) }
        if let match = free.firstIndex(where: { intersectionOverUnion(detected, polygons[$0]) > 0.1 }) {
          out.found.insert(folder + "/" + stem + "#" + String(free[match]))
          free.remove(at: match)
        } else {
          out.falsePositives += 1
        }
      }
    }
    return out
  }

  /// Decodes each labelled image in `folder` (`variant` applied) and hands `body` its stem, its
  /// labelled corners (mirrored with the image), the results and the decode time in ms.
  static func forEachLabelledImage(
    in folder: String, settings: DecodeSettings, variant: String, reader: ImageFileReader,
    _ body: (_ stem: String, _ polygons: inout [[Point]], borrowing DecodeResults, Double) throws(ParseError) -> Void
  ) throws(ParseError) {
    for name in (try? listDirectory(folder)) ?? [] where name.hasSuffix(".jpg") || name.hasSuffix(".png") || name.hasSuffix(".pgm") {
      let stem = String(name.dropLast(4))
      guard let truth = try? readWholeFile(folder + "/" + stem + ".txt", maxBytes: 1 << 20) else { continue }
      let labels = parseLabels(String(decoding: truth, as: UTF8.self))
      guard var image = try? reader.read(folder + "/" + name) else { continue }
      image = DecodeCommand.transformed(image, variant)
      try DecodeCommand.decode(image, settings: settings, capacity: 64) { results, ms throws(ParseError) in
        var polygons: [[Point]] = labels.map { label in
          variant == "mirrored" ? label.map { (Double(image.width - 1) - $0.x, $0.y) } : label
        }
        try body(stem, &polygons, results, ms)
      }
    }
  }

  /// `--each-attempt`: every attempt of the strategy alone over the whole directory (codes found,
  /// total decode time), then the greedy order by new codes per millisecond: each step takes the
  /// attempt that adds the most codes not yet found per millisecond it costs.
  static func eachAttempt(directory: String, settings: DecodeSettings, variant: String, reader: ImageFileReader) throws(ParseError) -> Int32 {
    guard let categories = try? listDirectory(directory).filter({ isDirectory(directory + "/" + $0) }), !categories.isEmpty else {
      throw ParseError(message: "no category folders under \(directory)")
    }
    var singles: [(DecodeAttempt, Set<String>, Double, Int)] = []
    var labelled = 0
    print("attempt                        found   false   total ms   median ms")
    for attempt in settings.attempts {
      var one = settings
      one.attempts = [attempt]
      var found: Set<String> = []
      var times: [Double] = []
      var falsePositives = 0
      labelled = 0
      for category in categories {
        let s = try score(folder: directory + "/" + category, settings: one, variant: variant, reader: reader)
        found.formUnion(s.found)
        times += s.milliseconds
        falsePositives += s.falsePositives
        labelled += s.labelled
      }
      let total = times.reduce(0, +)
      singles.append((attempt, found, total, falsePositives))
      print(
        attempt.name.padding(toLength: 30) + String(found.count).padding(toLength: 6, left: true)
          + String(falsePositives).padding(toLength: 8, left: true)
          + formatMilliseconds(total).padding(toLength: 11, left: true)
          + formatMilliseconds(median(times)).padding(toLength: 12, left: true))
      flushStandardOutput()
    }
    print("greedy order (new codes per ms), of \(labelled) labelled:")
    var have: Set<String> = []
    var left = singles
    var spent = 0.0
    while !left.isEmpty {
      var best = 0
      var bestRate = -1.0
      for (k, s) in left.enumerated() {
        let rate = Double(s.1.subtracting(have).count) / max(s.2, 0.001)
        if rate > bestRate { bestRate = rate; best = k }
      }
      let s = left.remove(at: best)
      let gain = s.1.subtracting(have).count
      have.formUnion(s.1)
      spent += s.2
      print(
        "  + " + s.0.name.padding(toLength: 30) + "+\(gain)".padding(toLength: 6, left: true)
          + "  → \(have.count)".padding(toLength: 8, left: true) + "   cumulative \(formatMilliseconds(spent)) ms")
    }
    return 0
  }

  /// Corner quadrilaterals from a BoofCV ground-truth file: after a `SETS` line one code per
  /// line (eight numbers); without one, one corner per line, four lines per code.
  static func parseLabels(_ text: String) -> [[Point]] {
    var numbers: [Double] = []
    var out: [[Point]] = []
    let hasSets = text.contains("SETS")
    for line in text.split(separator: "\n") {
      let trimmed = line.drop(while: { $0 == " " })
      if trimmed.hasPrefix("#") || trimmed.hasPrefix("SETS") { continue }
      let values = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { Double($0) }
      if hasSets {
        if values.count == 8 { out.append((0..<4).map { (values[2 * $0], values[2 * $0 + 1]) }) }
      } else {
        numbers += values
      }
    }
    var i = 0
    while i + 8 <= numbers.count {
      out.append((0..<4).map { (numbers[i + 2 * $0], numbers[i + 2 * $0 + 1]) })
      i += 8
    }
    return out
  }

  static func area(_ p: [Point]) -> Double {
    var s = 0.0
    for i in 0..<p.count {
      let a = p[i], b = p[(i + 1) % p.count]
      s += a.x * b.y - b.x * a.y
    }
    return s / 2
  }

  /// Intersection over union of two convex quadrilaterals (Sutherland–Hodgman clipping).
  static func intersectionOverUnion(_ a: [Point], _ b: [Point]) -> Double {
    let pa = area(a) < 0 ? Array(a.reversed()) : a
    let pb = area(b) < 0 ? Array(b.reversed()) : b
    var output = pa
    for i in 0..<pb.count {
      let e0 = pb[i], e1 = pb[(i + 1) % pb.count]
      func inside(_ p: Point) -> Bool { (e1.x - e0.x) * (p.y - e0.y) - (e1.y - e0.y) * (p.x - e0.x) >= 0 }
      func cross(_ p: Point, _ q: Point) -> Point {
        let dx = q.x - p.x, dy = q.y - p.y, ex = e1.x - e0.x, ey = e1.y - e0.y
        let denominator = dx * ey - dy * ex
        guard denominator != 0 else { return p }
        let t = ((e0.x - p.x) * ey - (e0.y - p.y) * ex) / denominator
        return (p.x + t * dx, p.y + t * dy)
      }
      let input = output
      output = []
      guard !input.isEmpty else { break }
      for j in 0..<input.count {
        let current = input[j], previous = input[(j + input.count - 1) % input.count]
        if inside(current) {
          if !inside(previous) { output.append(cross(previous, current)) }
          output.append(current)
        } else if inside(previous) {
          output.append(cross(previous, current))
        }
      }
    }
    let intersection = output.count >= 3 ? abs(area(output)) : 0
    let union = abs(area(pa)) + abs(area(pb)) - intersection
    return union > 0 ? intersection / union : 0
  }
}

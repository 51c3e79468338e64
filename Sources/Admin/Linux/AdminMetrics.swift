import ScanCore

/// `/metrics`: the reader's counters in Prometheus' text format (version 0.0.4), for the site's
/// monitoring. It answers only a request that carries the token (`Authorization: Bearer <token>`,
/// the token in `admin.metrics_token_file`, compared in constant time); without a token file it
/// is not there (404). The numbers are the console's STATS, read as a viewer: counts and
/// latencies, never a label, a tag or a payload.
enum AdminMetrics {
  /// (STATS line's first word, the field, the metric, its type, help).
  static let fields: [(line: String, field: String, metric: String, type: String, help: String)] = [
    ("frames", "frames", "scangate_frames_total", "counter", "Frames the reader looked at."),
    ("frames", "with-codes", "scangate_frames_with_codes_total", "counter", "Frames in which a code was found."),
    ("frames", "dropped", "scangate_frames_dropped_total", "counter", "Frames the camera dropped."),
    ("frames", "over-budget", "scangate_decode_over_budget_total", "counter", "Frames whose decoding ran past the CPU budget."),
    ("decisions", "granted", "scangate_decisions_granted_total", "counter", "Decisions that opened."),
    ("decisions", "denied", "scangate_decisions_denied_total", "counter", "Decisions that refused."),
    ("decisions", "manual-opens", "scangate_manual_opens_total", "counter", "Opens by an operator or a button."),
    ("decisions", "gpio-errors", "scangate_gpio_errors_total", "counter", "GPIO errors."),
    ("decisions", "relay-watchdog-trips", "scangate_relay_watchdog_trips_total", "counter", "Times the relay watchdog cut the relay."),
    ("decoder-workers", "restarts", "scangate_decoder_restarts_total", "counter", "Decoder worker restarts."),
    ("decoder-workers", "crashed", "scangate_decoder_crashes_total", "counter", "Decoder workers that crashed."),
    ("console", "bad-lines", "scangate_console_bad_lines_total", "counter", "Console lines refused."),
  ]

  /// The metrics text from STATS' joined body lines.
  static func text(stats: [String]) -> String {
    var values: [String: String] = [:]
    var decode: [(String, String)] = []
    for line in stats {
      let words = line.split(separator: " ").map(String.init)
      guard let first = words.first else { continue }
      for i in 0..<(words.count - 1) where Double(words[i + 1]) != nil {
        values[first + " " + words[i]] = values[first + " " + words[i]] ?? words[i + 1]
      }
      if first == "decode" {
        for q in ["p50", "p99"] {
          if let i = words.firstIndex(of: q), i + 1 < words.count, let ms = Double(words[i + 1]) { decode.append((q, String(ms / 1000))) }
        }
      }
    }
    var out = ""
    for f in fields {
      guard let v = values[f.line + " " + f.field] else { continue }
      out += "# HELP \(f.metric) \(f.help)\n# TYPE \(f.metric) \(f.type)\n\(f.metric) \(v)\n"
    }
    if !decode.isEmpty {
      out += "# HELP scangate_decode_seconds Time to decode a frame.\n# TYPE scangate_decode_seconds summary\n"
      for (q, s) in decode { out += "scangate_decode_seconds{quantile=\"\(q == "p50" ? "0.5" : "0.99")\"} \(s)\n" }
    }
    return out
  }
}

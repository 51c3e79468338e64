import Glibc

/// Flushes standard output (print buffers when not a terminal).
public func flushStandardOutput() { fflush(nil) }

/// Milliseconds with two decimals.
public func formatMilliseconds(_ ms: Double) -> String {
  let hundredths = Int((ms * 100).rounded())
  let fraction = hundredths % 100
  return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
}

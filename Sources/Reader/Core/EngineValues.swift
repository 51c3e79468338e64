import ScanAccess
import ScanBase

/// Counters and latency histograms of the loop (fixed size).
public struct ScanStats: Sendable {
  public var frames: UInt64 = 0
  public var framesWithCodes: UInt64 = 0
  public var symbols: UInt64 = 0
  public var grants: UInt64 = 0
  public var denies: UInt64 = 0
  public var manualOpens: UInt64 = 0
  public var gpioErrors: UInt64 = 0
  /// Times the relay watchdog drove the relay inactive because the loop had not by its cap.
  public var relayWatchdogTrips: UInt64 = 0
  public var truncatedPayloads: UInt64 = 0
  /// Time spent in the decoder per frame.
  public var decode = LatencyHistogram()
  /// Decode attempts made (the strategy's views and engine options), and frames whose turn
  /// ended because the per-frame budget was spent.
  public var decodeAttempts: UInt64 = 0
  public var framesOverBudget: UInt64 = 0
  /// Quiet frames (nothing changed and nothing read lately: one attempt every other frame).
  public var framesQuiet: UInt64 = 0
  /// The configured per-frame decode budget (0: none) and the CPU the strategy spent in total.
  public var decodeBudgetMicroseconds: UInt64 = 0
  public var decodeStrategyMicroseconds: UInt64 = 0
  /// Frame capture to decision.
  public var frameToDecision = LatencyHistogram()
  /// Frame capture to the relay's (or, on a deny, the buzzer's) first edge.
  public var frameToEdge = LatencyHistogram()
  public init() {}
}

/// Everything the engine is configured with.
public struct EngineSettings: Equatable, Sendable {
  public var decode = DecodeSettings()
  public var presence = PresenceSettings()
  public var actuation = ActuationSettings()
  public var resultsCapacity = 8
  public var payloadBytesMax = 1_024
  public var allowList = AllowListLimits()
  public var presenceSlots = 32
  public init() {}
}

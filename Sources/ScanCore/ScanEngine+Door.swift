/// What the door asks of the strike: a release for the exit button, and an early relock once the
/// door has closed again. Both go through the actuator, so the relay's cap and its guard hold.
extension ScanEngine where Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  /// Releases the strike for the configured pulse (exit button). Returns false when the relay
  /// is resting after its maximum on-time. Records nothing itself: the door records the request.
  @discardableResult
  public mutating func releaseStrikeForExit() -> Bool {
    guard actuator.pulseRelay(at: clock.now()) else { return false }
    tick()
    return true
  }

  /// Ends the strike's pulse now (the door closed again before it ran out).
  public mutating func relockStrike() {
    guard actuator.relayActive(at: clock.now()) else { return }
    actuator.releaseRelay()
    tick()
  }
}

import ScanBase

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

  /// Holds the strike released for one more lease (an unlock window; the owner renews it every
  /// `ActuationSettings.relayHoldRenewMilliseconds`). The relay watchdog follows the lease: a
  /// loop that stops renewing has the strike locked within a lease and the guard's margin.
  @discardableResult
  public mutating func holdStrike() -> Bool {
    tick()  // a trip the watchdog left is taken first, so it is not re-armed over it
    guard actuator.holdRelay(at: clock.now()) else { return false }
    if relayGuardArmed { armRelayGuard() }  // the period's end moved with the lease
    tick()
    return true
  }

  /// Ends an unlock window's hold now: the strike locks.
  public mutating func endStrikeHold() {
    guard actuator.isHolding else { return }
    actuator.endHold()
    tick()
  }

  /// Ends the strike's pulse now (the door closed again before it ran out); never during an
  /// unlock window's hold.
  public mutating func relockStrike() {
    guard actuator.relayActive(at: clock.now()), !actuator.isHolding else { return }
    actuator.releaseRelay()
    tick()
  }

  /// The fire panel's release began (`on`) or ended: the strike is held released past its cap
  /// (the relay watchdog disarmed, since no cap applies) until it ends; then it locks at once,
  /// any pulse given meanwhile included. Records nothing itself: the emergency records the alarm.
  public mutating func setFireRelease(_ on: Bool) {
    guard actuator.fireRelease != on else { return }
    actuator.fireRelease = on
    if on {
      disarmRelayGuard()
    } else {
      actuator.releaseRelay()
    }
    tick()
  }
}

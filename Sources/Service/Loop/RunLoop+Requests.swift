import ScanConsole
import ScanCore
import ScanLinux
import ScanLoop

/// The participants' requests (`LoopRequest`), applied once per iteration after they are serviced.
extension RunLoop where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  /// Applies what the participants asked this iteration, in `LoopRequest.Kind` order (each kind
  /// once: the queue coalesces), then moves a participant's snapshot along.
  mutating func applyRequests() {
    while let request = requests.next() { apply(request) }
    offerSnapshot()
  }

  /// Carries out one participant's request: the one place a request meets the loop or engine.
  private mutating func apply(_ request: LoopRequest) {
    switch request {
    case .stop: requestStop()
    case .open(let milliseconds, let by): _ = open(milliseconds: milliseconds, by: by)
    case .reloadAllowList: reloadAllowList()
    case .releaseStrikeForExit: engine.releaseStrikeForExit()
    case .relockStrike: engine.relockStrike()
    case .holdStrike: engine.holdStrike()
    case .endStrikeHold: engine.endStrikeHold()
    case .fireRelease(let on): engine.setFireRelease(on)
    case .lockdown(let on): engine.policy.lockdown = on
    case .accessStaticOnly(let staticOnly): engine.policy.staticOnly = staticOnly
    case .secondFactor(let id, let verdict): engine.completeSecondFactor(id: id, verdict: verdict)
    case .play(let pattern): engine.play(pattern)
    case .holdBuzzer(let hold): engine.holdBuzzer(hold)
    case .snapshot(let sink): snapshotting.sink = sink
    }
  }

  /// A participant's snapshot: captured on the next frame (beside a console's, which keeps its
  /// own flag), then handed over once.
  private mutating func offerSnapshot() {
    // While a console PNG is rendered, the snapshot thread reads the engine's buffer: no capture
    // into it until that is done.
    guard let sink = snapshotting.sink, snapshotting.phase != .rendering else { return }
    guard engine.snapshotCaptured else {
      engine.captureSnapshot = true
      return
    }
    engine.snapshot.framesPerSecondTimes100 = framesPerSecondTimes100
    guard sink.deliver(engine.snapshot) else {
      engine.captureSnapshot = true
      return
    }
    snapshotting.sink = nil
    if snapshotting.phase != .capturing { engine.snapshotCaptured = false }
  }
}

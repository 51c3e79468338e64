import ScanConsole
import ScanCore
import ScanLinux

/// systemd's side of the loop: readiness, status text and the watchdog (`ServiceNotifier`).
extension RunLoop where Source: ~Copyable, Decoder: ~Copyable, Relay: ~Copyable, Buzzer: ~Copyable {
  /// READY=1 once the first camera open has been tried (the reader is up, streaming or
  /// degraded), STATUS= on every change of camera state, and the watchdog from every iteration.
  mutating func notifySystemd() {
    guard notifier.isActive else { return }
    notifier.tick(now: engine.clock.now())
    let state = supervisor.state
    guard state != .starting, !notifier.readySent || state != statusSentState else { return }
    statusSentState = state
    let summary = cameraSummary, entries = engine.allowList.count
    let write: (inout ByteWriter) -> Void = { w in
      w.write("camera ")
      w.write(state.name)
      w.write(" ")
      ConsoleText.writeSanitized(summary, into: &w)
      w.write("; allow-list ")
      w.write(entries)
      w.write(" entries")
    }
    if notifier.readySent {
      notifier.send { w in
        w.write("STATUS="); write(&w)
      }
    } else {
      notifier.ready(status: write)
    }
  }
}

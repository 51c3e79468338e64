import CGPIOD
import CLinux
import ScanCore
import ScanPlatform

/// The relay's hard cap, held off the loop: the `RelayGuard` of the service's engine.
///
/// A thread of its own, in the GPIO shim (C, not Swift: it runs no Swift runtime, takes no lock
/// and allocates nothing, so a loop stalled anywhere, in SQLite, a driver call or the allocator,
/// cannot hold it up; and its futex word is a plain C11 atomic). The engine arms it with the
/// period's cap end plus `ActuationSettings.relayWatchdogMarginMilliseconds` before it drives
/// the relay active, and disarms it once it has driven the relay inactive; if the deadline passes
/// while armed, the thread drives the relay inactive through the crash guard's table of
/// registered lines (the crash handler's ioctl) and leaves the trip for the engine's next
/// `tick`. It only ever drives the line inactive: "one owner per device" still holds for every
/// active write, and an inactive write racing the owner's own is harmless.
///
/// Arming is two atomic stores and a FUTEX_WAKE, disarming one store, `takeTrip` one load on
/// the loop's thread (none allocates). Deadlines are CLOCK_MONOTONIC (`SystemMonotonicClock`).
/// Stop it (or let it go) before its line is released; a disarmed watchdog never touches it.
public final class RelayWatchdog: RelayGuard, @unchecked Sendable {
  private var handle: OpaquePointer?
  /// What the callback drives for a simulated line (retained while the thread runs).
  private let simulated: Unmanaged<InactiveDriver>?

  /// Drives a simulated line inactive from the watchdog's thread.
  final class InactiveDriver {
    let drive: () -> Void
    init(_ drive: @escaping () -> Void) { self.drive = drive }
  }

  /// A watchdog for a libgpiod line (the relay), started now.
  public init(relay: borrowing GPIODOutputLine) throws(GPIOError) {
    simulated = nil
    guard let handle = sg_relay_watchdog_start(relay.shimLine, nil, nil) else {
      throw GPIOError(errno: .current, operation: "start the relay watchdog for \(relay.chip) line \(relay.offset)")
    }
    self.handle = handle
  }

  /// A watchdog for a simulated line (`gpio.backend = "sim"`, tests): the thread calls its
  /// `set(.inactive)`.
  /// The line must be a class whose `set` is safe to call from another thread.
  public init<Line: OutputLine & AnyObject>(simulated line: Line) throws(GPIOError) {
    let driver = InactiveDriver {
      var l = line
      try? l.set(.inactive)  // a failing line fails the crash handler's way: silently, counted as a trip
    }
    let retained = Unmanaged.passRetained(driver)
    simulated = retained
    guard
      let handle = sg_relay_watchdog_start(
        nil,
        { context in
          Unmanaged<InactiveDriver>.fromOpaque(context!).takeUnretainedValue().drive()
        }, retained.toOpaque())
    else {
      retained.release()
      throw GPIOError(errno: .current, operation: "start the relay watchdog for a simulated line")
    }
    self.handle = handle
  }

  deinit { stop() }

  public func arm(deadline: Instant) {
    guard let handle else { return }
    sg_relay_watchdog_arm(handle, deadline.nanoseconds)
  }

  public func disarm() {
    guard let handle else { return }
    sg_relay_watchdog_disarm(handle)
  }

  public func takeTrip() -> Instant? {
    guard let handle else { return nil }
    let at = sg_relay_watchdog_take_trip(handle)
    return at == 0 ? nil : Instant(nanoseconds: at)
  }

  /// Times the thread drove the relay inactive, and times it was armed.
  public var trips: UInt64 { handle.map { sg_relay_watchdog_trips($0) } ?? 0 }
  public var arms: UInt64 { handle.map { sg_relay_watchdog_arms($0) } ?? 0 }

  /// Stops the thread and waits for it (from the owner's thread). Safe to call more than once.
  public func stop() {
    guard let handle else { return }
    sg_relay_watchdog_stop(handle)
    self.handle = nil
    simulated?.release()
  }
}

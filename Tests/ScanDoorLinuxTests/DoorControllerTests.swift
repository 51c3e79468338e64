import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import Synchronization
import ScanTestSupport
import Testing

/// The door controller registered with the real loop on a manual clock, over simulated input
/// lines: the strike the engine drives, the exit button's release, relock on close, the
/// forced and held-open alarms on the alarm line, and the console's DOOR view.
@Suite(.serialized) struct DoorControllerTests {
  typealias World = DoorWorld

  @Test("exit button: a debounced press releases the strike; the door opens and closes; the strike locks on close")
  func exitRelease() {
    let w = World()
    w.exitButton.schedule(.active, at: w.at(100))
    w.exitButton.schedule(.inactive, at: w.at(300))
    w.contact.schedule(.active, at: w.at(600))
    w.contact.schedule(.inactive, at: w.at(1_500))
    w.run(ms: 2_500)
    #expect(w.doorEvents() == ["exit-request", "door-unlocked exit-button", "door-opened", "door-closed 0s", "door-locked"])
    // The relay went active once, and was driven inactive on close, long before its 3 s pulse.
    let periods = w.relay.activePeriodsMilliseconds
    #expect(periods.count == 1)
    #expect(periods.first.map { $0 >= 1_400 - 120 && $0 < 1_500 } == true)
    #expect(w.alarm.edgeCount == 0)
    #expect(w.door.machine.state == .closed)
  }

  @Test("a console OPEN is an unlock by console; held open past held_open_ms beeps the alarm line until closed")
  func heldOpen() {
    let w = World()
    w.run(ms: 50)
    w.loop.engine.openManually(milliseconds: 1_000)
    w.contact.schedule(.active, at: w.at(200))
    w.contact.schedule(.inactive, at: w.at(4_000))
    w.run(ms: 4_500)
    #expect(
      w.doorEvents() == ["door-unlocked console", "door-opened", "door-locked", "door-held-open 2s", "door-closed 3s"])
    // Held open at 2.22 s (open at 0.22 s after debounce), closed at 4.02 s: 200 ms on, 800 off.
    let beeps = w.alarm.activePeriodsMilliseconds
    #expect(beeps.count == 2 && beeps.allSatisfy { $0 >= 195 && $0 <= 205 })
    // The second relay: steady from held open (2.22 s) to closed (4.02 s).
    let aux = w.aux.activePeriodsMilliseconds
    #expect(aux.count == 1 && aux[0] >= 1_795 && aux[0] <= 1_805)
    #expect(w.alarm.level == .inactive)
  }

  @Test("a door opened without an unlock is forced: the alarm line sounds for forced_alarm_ms")
  func forced() {
    let w = World()
    w.contact.schedule(.active, at: w.at(100))
    w.contact.schedule(.inactive, at: w.at(400))
    w.run(ms: 2_000)
    #expect(w.doorEvents() == ["door-forced", "door-closed 0s"])
    let alarm = w.alarm.activePeriodsMilliseconds
    #expect(alarm.count == 1 && alarm[0] >= 995 && alarm[0] <= 1_005)
    // The second relay follows the alarm's state steadily.
    let aux = w.aux.activePeriodsMilliseconds
    #expect(aux.count == 1 && aux[0] >= 995 && aux[0] <= 1_005)
    #expect(w.relay.edgeCount == 0)
    #expect(w.loop.consoleStatus().door?.forcedCount == 1)
  }

  @Test("contact bounce: 20 edges in 10 ms on opening give one transition")
  func bounce() {
    let w = World()
    w.run(ms: 50)
    w.loop.engine.openManually(milliseconds: 2_000)
    var level = LineLevel.active
    for k in 0...20 {
      w.contact.schedule(level, at: w.at(200).adding(milliseconds: 0).adding(milliseconds: k / 2))
      level = level == .active ? .inactive : .active
    }
    w.run(ms: 500)
    #expect(w.doorEvents() == ["door-unlocked console", "door-opened"])
    #expect(w.door.machine.rawEdges == 21)
  }

  /// A line read the way libgpiod 1.6 reads the kernel: edges wait in a FIFO of 16, and one that
  /// finds it full is dropped (the newest lost, as gpiolib-cdev's v1 `lineevent_irq_thread`
  /// does); the line's level is always the last edge's.
  final class KernelFIFOLine: InputLine {
    private var edges: [(level: LineLevel, at: Instant)] = []
    private var arrived = 0  // edges up to here have happened
    private var queue: [(level: LineLevel, at: Instant)] = []
    private var level = LineLevel.inactive
    private(set) var dropped = 0

    func schedule(_ level: LineLevel, at: Instant) { edges.append((level, at)) }

    private func arrive(until now: Instant) {
      while arrived < edges.count && edges[arrived].at <= now {
        if queue.count < 16 { queue.append(edges[arrived]) } else { dropped += 1 }
        level = edges[arrived].level
        arrived += 1
      }
    }

    var pollDescriptor: Int32 { -1 }
    var nextEdgeAt: Instant? { arrived < edges.count ? edges[arrived].at : (queue.isEmpty ? nil : queue[0].at) }
    var backend: String { "kernel FIFO" }
    func currentLevel() throws(GPIOError) -> LineLevel { level }

    func readEdges(now: Instant, _ body: (LineLevel, Instant) -> Void) throws(GPIOError) -> Int {
      arrive(until: now)
      let n = queue.count
      for e in queue { body(e.level, e.at) }
      queue.removeAll()
      return n
    }
  }

  @Test("a bounce the kernel's FIFO overflowed on (the newest edges lost): the line's level after the read wins")
  func lostEdges() {
    let contact = KernelFIFOLine()
    let w = World(contactLine: contact)
    w.run(ms: 60, step: 20)
    w.loop.engine.openManually(milliseconds: 2_000)
    // 21 edges in 10 ms ending open, all between two reads of a busy loop (20 ms apart): the
    // FIFO keeps the first 16, which end closed.
    var level = LineLevel.active
    for k in 0...20 {
      contact.schedule(level, at: Instant(nanoseconds: w.at(205).nanoseconds + UInt64(k) * 500_000))
      level = level == .active ? .inactive : .active
    }
    w.run(ms: 500, step: 20)
    #expect(contact.dropped == 5)
    #expect(w.doorEvents() == ["door-unlocked console", "door-opened"])
    #expect(w.door.machine.level(.contact) == .active)
    #expect(w.door.resyncs == 1)
    let text = withUnsafeTemporaryAllocation(byteCount: 512, alignment: 1) { buffer in
      var writer = ByteWriter(buffer)
      w.door.doorStatus().write(into: &writer)
      return String(decoding: writer.written, as: UTF8.self)
    }
    #expect(text.contains(", lost edges made up 1 ("))
  }

  @Test("tamper: recorded both ways; the alarm line sounds while it lasts; DOOR and STATUS show the door")
  func tamperAndStatus() {
    let w = World()
    w.tamper.schedule(.active, at: w.at(100))
    w.run(ms: 500)
    #expect(w.alarm.level == .active)
    let status = w.loop.consoleStatus()
    let text = withUnsafeTemporaryAllocation(byteCount: 4_096, alignment: 1) { buffer in
      var writer = ByteWriter(buffer)
      ConsoleText.writeDoor(status.door, into: &writer)
      return String(decoding: writer.written, as: UTF8.self)
    }
    #expect(text.hasPrefix("| door closed, strike locked; contact closed, exit released, tamper active, alarm on"))
    #expect(text.hasSuffix("OK door closed\n"))
    w.tamper.schedule(.inactive, at: w.at(1_000))
    w.run(ms: 1_000)
    #expect(w.alarm.level == .inactive)
    #expect(w.doorEvents() == ["tamper active", "tamper restored"])
  }

  @Test("an unlock window holds the strike for its whole span, past the pulse cap; held-open is not timed and close does not relock")
  func unlockWindow() {
    let w = World()
    let keeper = w.keepUnlockWindows("schedule shop mon-fri 20:27-20:28\nunlock shop\n")
    w.run(ms: 18_000, step: 50)  // 20:26:59
    #expect(w.relay.edgeCount == 0 && !keeper.holding)
    w.contact.schedule(.active, at: w.at(25_000))
    w.contact.schedule(.inactive, at: w.at(55_000))
    w.run(ms: 63_000, step: 50)  // 20:28:02
    #expect(
      w.doorEvents() == [
        "unlock-window holding", "door-unlocked schedule", "door-opened", "door-closed 30s", "unlock-window ended",
        "door-locked",
      ])
    // One relay period, the window's minute, where a pulse is capped at 10 s.
    let periods = w.relay.activePeriodsMilliseconds
    #expect(periods.count == 1 && periods.allSatisfy { $0 >= 59_900 && $0 <= 61_100 })
    #expect(w.relay.level == .inactive && w.door.machine.state == .closed && w.door.machine.heldOpenCount == 0)
    #expect(w.alarm.edgeCount == 0)
  }

  @Test("first-person-in: the window holds the strike only after a grant inside it")
  func firstPersonIn() {
    let w = World()
    let keeper = w.keepUnlockWindows("schedule shop mon-fri 20:27-20:29\nunlock shop\nfirst-person-in\n")
    w.recordGrant()  // before the window: does not start it
    w.run(ms: 30_000, step: 50)  // 20:27:11, the window stands
    #expect(keeper.windowOpen && !keeper.holding && w.relay.edgeCount == 0)
    w.recordGrant()
    w.run(ms: 1_000, step: 50)
    #expect(keeper.holding && w.relay.level == .active)
    w.run(ms: 40_000, step: 50)
    #expect(w.relay.level == .active)  // held past any pulse
    #expect(w.doorEvents().first == "unlock-window holding")
  }

  @Test("an unsynchronised clock holds a window off: the strike stays locked until the clock is trusted")
  func clockHoldsOff() {
    let w = World()
    let trusted = Mutex(false)
    let keeper = w.keepUnlockWindows("schedule shop mon-fri 20:26-20:30\nunlock shop\n", clockTrusted: { trusted.withLock { $0 } })
    w.run(ms: 5_000, step: 50)
    #expect(keeper.windowOpen && keeper.heldOffByClock && !keeper.holding && w.relay.edgeCount == 0)
    #expect(w.doorEvents() == ["unlock-window clock-unsynchronised"])
    trusted.withLock { $0 = true }
    w.run(ms: 2_000, step: 50)
    #expect(keeper.holding && w.relay.level == .active && !keeper.heldOffByClock)
    #expect(w.doorEvents() == ["unlock-window clock-unsynchronised", "unlock-window holding", "door-unlocked schedule"])
  }

  @Test("a hold that is not renewed lapses within one lease, and the relay rests after it")
  func holdLapses() {
    var a = Actuator(settings: ActuationSettings())
    let t0 = Instant(nanoseconds: 5_000_000_000)
    let held = a.holdRelay(at: t0)
    #expect(held)
    #expect(a.relayActive(at: t0.adding(milliseconds: 2_999)))
    let during = a.levels(at: t0.adding(milliseconds: 2_999)).relay
    let after = a.levels(at: t0.adding(milliseconds: ActuationSettings.relayHoldLeaseMilliseconds)).relay
    #expect(during == .active && after == .inactive)
    #expect(!a.isHolding)
    let pulsed = a.pulseRelay(at: t0.adding(milliseconds: 3_100))
    #expect(!pulsed)  // resting, like any capped period
    // Renewed every second, it holds for as long as it is renewed.
    var b = Actuator(settings: ActuationSettings())
    for k in 0..<100 {
      let renewed = b.holdRelay(at: t0.adding(milliseconds: k * 1_000))
      let level = b.levels(at: t0.adding(milliseconds: k * 1_000 + 999)).relay
      #expect(renewed && level == .active)
    }
    b.endHold()
    let ended = b.levels(at: t0.adding(milliseconds: 100_000)).relay
    #expect(ended == .inactive)
  }
}

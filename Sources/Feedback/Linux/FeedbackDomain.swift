import ScanBase
import ScanFeedback
import ScanLoop
import ScanPlatform

/// The feedback domain as the composition root takes it: `[feedback]` (FeedbackSettings, its
/// keys and checks) and the lamps made from it. No lamp wired: no participant.
public enum FeedbackDomain: ReaderDomain {
  package static func attach(
    _ f: FeedbackSettings, _ start: DomainStart, to host: inout some ParticipantHost & ~Copyable
  )
    throws(DomainRefused) -> (any ReleasedAtStop)?
  {
    guard f.isWired else { return nil }
    let lights: FeedbackLights
    do throws(GPIOError) {
      // Green, red and amber, each by its key ("feedback.green_line": gpioinfo shows "scangate-green").
      var lamps: [(any OutputLine)?] = []
      for (key, offset) in f.linesInUse {
        let name = key.dropFirst("feedback.".count).prefix { $0 != "_" }
        lamps.append(try start.outputs.output(key, offset: offset, activeLow: f.activeLow, consumer: "scangate-" + name))
      }
      lights = FeedbackLights(
        settings: f, ring: start.ring, green: lamps[0], red: lamps[1], amber: lamps[2], backend: start.outputs.name,
        standing: (fire: start.fire, lockdown: start.lockdown))
    } catch {
      throw DomainRefused("cannot request the feedback lamps: \(error.operation): \(error.errno)")
    }
    host.register(lights)
    return lights
  }
}

extension FeedbackLights: ReleasedAtStop {}

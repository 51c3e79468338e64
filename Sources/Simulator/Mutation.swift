/// Deliberate bugs the simulator can run with, to show that its invariants catch them
/// (docs/testing.md, "The simulator"). They exist only in this module, which `scangate` does not
/// link: each replaces one part of the simulated world with a faulty one at a seam.
public enum SimMutation: String, CaseIterable, Sendable {
  /// The relay driver never drives the relay inactive again.
  case relayStuck = "relay-stuck"
  /// The relay goes active by itself now and then (a driver glitch, another process on the line).
  case spuriousPulse = "spurious-pulse"
  /// The decoder reads MALLORY's code as ALICE's.
  case decoderConfusion = "decoder-confusion"
  /// A revocation is written to the allow-list file but the live list is not reloaded.
  case revocationNotReloaded = "revocation-not-reloaded"
  /// A lockdown is latched, but the decision policy is never told.
  case lockdownNotApplied = "lockdown-not-applied"
  /// A restart comes back without the latched lockdown (the latch was not durable).
  case restartForgetsLockdown = "restart-forgets-lockdown"
  /// The console's LOCKDOWN OFF lifts a lockdown whoever latched it (it asks with the holder's
  /// authority): a lockdown the fleet latched is lifted on site.
  case consoleLiftsAnyLockdown = "console-lifts-any-lockdown"
  /// A restart loads the allow-list the reader started with, not the file as last written.
  case restartForgetsRevocation = "restart-forgets-revocation"
  /// The use store's sync reports success and keeps nothing: after a restart a guest pass's
  /// spent uses are back.
  case fsyncLies = "fsync-lies"
  /// The use store never finds a use it recorded (a lookup by the wrong key).
  case useStoreForgets = "use-store-forgets"
  /// The feedback lamps are made at a restart without the lockdown that stands (a latch restored
  /// from its file records no event): they would invite a code with the ready lamp.
  case lampsNotToldAtStart = "lamps-not-told-at-start"
  /// The lamps' owner filters out the lockdown's events.
  case lampsMissLockdown = "lamps-miss-lockdown"
  /// The use store swallows a full disk's error: it says a use was written that never was.
  case diskFullIgnored = "disk-full-ignored"
  /// The fleet link counts a record acknowledged when it is sent (QoS 0 thinking): a cut
  /// connection loses it, and the state file says the broker has it.
  case fleetAcksOnPublish = "fleet-acks-on-publish"
  /// The fleet link writes the highest record it published to its state file, not the highest
  /// the broker acknowledged.
  case fleetSavesSentMark = "fleet-saves-sent-mark"
  /// The fleet link takes any PUBACK as the oldest publish's, not the message id it names (a
  /// duplicate or stray PUBACK then acknowledges a record the broker never got).
  case fleetTrustsAnyPuback = "fleet-trusts-any-puback"
  /// The fleet link does not notice an established connection going (a cut, the broker gone): it
  /// publishes into it until the session's own acknowledgement timeout gives it up.
  case fleetMissesLostConnection = "fleet-misses-lost-connection"
  /// The fleet link reads the log one record off (sequence N from the N+1th record: a 0- and
  /// 1-based mix-up), publishing each record under its neighbour's sequence.
  case fleetReadsNextRecord = "fleet-reads-next-record"
}

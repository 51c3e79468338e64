import Glibc
import ScanCore
import ScanPlatform
import ScanSimulator

/// `scangate-sim`: the reader in a simulated world, one seed driving everything (docs/testing.md,
/// "The simulator"). Ends with `digest <hex>` (SHA-256 of the run's whole trace); exits 0 when
/// every invariant held, 1 naming the one that failed.
let usage = """
  usage: scangate-sim --seed N [--steps N] [--mutate NAME] [--trace] [--keep I,J,...] [--no-shrink]
         scangate-sim --seeds COUNT [--from N] [--steps N]      seeds N.. N+COUNT-1 (default from 1)
         scangate-sim --mutate NAME [--steps N]                 seeds from 1 until the mutation is caught (at most 500)
         scangate-sim --list-mutations | --list-invariants
  """

func fail(_ text: String) -> Never {
  writeStandardError("scangate-sim: \(text)\n\(usage)\n")
  exit(2)
}

var seed: UInt64? = nil
var seeds: Int? = nil
var from: UInt64 = 1
var steps = 40_000
var mutation: SimMutation? = nil
var showTrace = false
/// Replay only these of the seed's drawn actions (indices, as a shrunk failure prints them).
var keep: [Int]? = nil
var shrinking = true
var arguments = CommandLine.arguments.dropFirst()
@MainActor func value(_ flag: String) -> String {
  guard let v = arguments.popFirst() else { fail("\(flag) needs a value") }
  return v
}
@MainActor func number<T: FixedWidthInteger & Sendable>(_ flag: String, positive: Bool = false) -> T {
  guard let n = T(value(flag)), !positive || n > 0 else { fail("\(flag): a \(positive ? "positive " : "")number") }
  return n
}
while let a = arguments.popFirst() {
  switch a {
  case "--seed": seed = number(a)
  case "--seeds": seeds = number(a, positive: true)
  case "--from": from = number(a)
  case "--steps": steps = number(a, positive: true)
  case "--mutate":
    let name = value(a)
    guard let m = SimMutation(rawValue: name) else { fail("no mutation \(name) (--list-mutations)") }
    mutation = m
  case "--trace": showTrace = true
  case "--no-shrink": shrinking = false
  case "--keep":
    let list = value(a)
    let indices = list.isEmpty ? [] : list.split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
    guard indices.allSatisfy({ ($0 ?? -1) >= 0 }), indices.count <= 100_000 else { fail("--keep: indices like 3,17,42") }
    keep = indices.map { $0! }
  case "--list-mutations":
    for m in SimMutation.allCases { print(m.rawValue) }
    exit(0)
  case "--list-invariants":
    for (name, what) in SimWorld.invariants { print("\(name): \(what)") }
    exit(0)
  case "--help", "-h":
    print(usage)
    exit(0)
  default: fail("unknown argument \(a)")
  }
}

if keep != nil && seed == nil { fail("--keep replays one seed's actions: with --seed") }
let digester = SodiumDigester()

/// Runs one seed (only the `keep` actions of it when given); prints its summary, or the
/// violation with the trace's tail, how to replay it, and (`shrink`) the fewest actions found that
/// still break the same invariant.
@MainActor func run(_ seed: UInt64, quiet: Bool, shrink: Bool = false) -> SimWorld.Violation? {
  var script: [SimStep]? = nil
  if let keep {
    let drawn = SimWorld.draw(seed: seed, mutation: mutation, steps: steps)
    guard keep.allSatisfy({ $0 < drawn.count }) else { fail("--keep: seed \(seed) draws \(drawn.count) actions in \(steps) steps") }
    script = keep.map { drawn[$0] }
  }
  let world = SimWorld(seed: seed, mutation: mutation, script: script)
  let violation = world.run(steps: steps)
  let c = world.counts
  let simulated = Double(world.step * SimWorld.tickMilliseconds) / 1000
  if showTrace { for line in world.trace.lines { print(line) } }
  if let v = violation {
    print("scangate-sim: seed \(seed) step \(v.step) (\(simulated) s simulated): invariant \(v.invariant) violated: \(v.detail)")
    print("the trace's last lines (the whole trace: --trace):")
    for line in world.trace.lines.suffix(15) { print("  " + line) }
    let kept = keep.map { " --keep " + $0.map(String.init).joined(separator: ",") } ?? ""
    print("replay: scangate-sim --seed \(seed) --steps \(v.step)" + (mutation.map { " --mutate \($0.rawValue)" } ?? "") + kept)
    if shrink && keep == nil { report(shrunk: seed, world.script, v) }
  } else if !quiet {
    print(
      "scangate-sim: seed \(seed), \(world.step) steps (\(simulated) s simulated): \(c.grants) grants, \(c.denials) denials, "
        + "\(c.restarts) restarts, \(c.clockJumps) clock jumps, \(c.revocations) revocations, \(c.lockdowns) lockdowns, "
        + "\(c.manualOpens) manual opens; \(world.fleetSummary); every invariant held")
  }
  if !quiet || violation != nil { print("digest \(world.trace.digest(digester))") }
  return violation
}

/// Shrinks a failing run's drawn actions and prints what is left and how to replay it.
@MainActor func report(shrunk seed: UInt64, _ script: [SimStep], _ v: SimWorld.Violation) {
  guard let (kept, shrunk) = SimWorld.shrink(seed: seed, mutation: mutation, steps: v.step, script: script, invariant: v.invariant) else {
    print("shrinking: the \(script.count) drawn actions replayed did not break \(v.invariant) again")
    return
  }
  print("shrunk: \(kept.count) of \(script.count) actions still break \(v.invariant) (at step \(shrunk.step)):")
  for i in kept { print("  [\(i)] step \(script[i].step): \(script[i].action.text)") }
  print(
    "replay the shrunk run: scangate-sim --seed \(seed) --steps \(v.step)" + (mutation.map { " --mutate \($0.rawValue)" } ?? "")
      + " --keep " + kept.map(String.init).joined(separator: ",") + " --trace")
}

if let seed {
  exit(run(seed, quiet: false, shrink: shrinking) == nil ? 0 : 1)
}
if let mutation, seeds == nil {
  // Find the first seed that catches the mutation.
  for s in UInt64(1)...500 {
    guard let v = run(s, quiet: true, shrink: shrinking) else { continue }
    print("mutation \(mutation.rawValue): caught by \(v.invariant) at seed \(s) step \(v.step)")
    exit(1)
  }
  print("mutation \(mutation.rawValue): not caught in seeds 1-500")
  exit(0)
}
guard let seeds else { fail("--seed, --seeds or --mutate") }
var failed: [UInt64] = []
// The first seed that fails is shrunk too.
for s in from..<(from + UInt64(seeds)) where run(s, quiet: true, shrink: shrinking && failed.isEmpty) != nil { failed.append(s) }
let which = failed.isEmpty ? "" : " (" + failed.map(String.init).joined(separator: ", ") + ")"
print("scangate-sim: seeds \(from)-\(from + UInt64(seeds) - 1), \(steps) steps each: \(seeds - failed.count) held, \(failed.count) failed" + which)
exit(failed.isEmpty ? 0 : 1)

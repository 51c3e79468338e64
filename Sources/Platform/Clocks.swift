import CLinux
import ScanBase

/// CLOCK_MONOTONIC.
public struct SystemMonotonicClock: MonotonicClock {
  public init() {}
  public func now() -> Instant { Instant(nanoseconds: sg_monotonic_ns()) }
}

/// CLOCK_THREAD_CPUTIME_ID: the CPU time the calling thread has used. A budget of CPU time
/// measured on it spends the same work on a loaded machine as on an idle one: time the thread
/// waits for a core, or sleeps, is not counted (the decoder worker's strategy budget).
public struct ThreadCPUClock: MonotonicClock {
  public init() {}
  public func now() -> Instant { Instant(nanoseconds: sg_thread_cpu_ns()) }
}

/// CLOCK_REALTIME.
public struct SystemWallClock: WallClock {
  public init() {}
  public func unixSeconds() -> Int64 { sg_realtime_seconds() }
  public func unixNanoseconds() -> Int64 { sg_realtime_ns() }
}

/// SHA-256 through libsodium.
public struct SodiumDigester: PayloadDigester {
  public init() { precondition(sg_sodium_init() == 0, "libsodium could not start") }
  public func sha256(_ bytes: UnsafeRawBufferPointer) -> Digest {
    withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { out in
      let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
      sg_sha256(base ?? UnsafePointer(bitPattern: 1)!, bytes.count, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
      return Digest(bytes: UnsafeRawBufferPointer(out))
    }
  }
}

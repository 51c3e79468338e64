import ScanCore
import ScanPlatform

/// The pattern in view (docs/decoder.md, "A pattern in view"): what the workers tell the
/// quarantine, the episode's two events, and where STATUS says the mask is.
extension DecoderWorkers {
  /// The decode in flight ended without a reply: the quarantine searches the tiles it showed.
  func abandonedInView(now: Instant) {
    quarantine.abandoned(at: now)
    noteMask(now: now)
  }

  /// A pattern episode ends once nothing was masked or searched for this long.
  static let patternClearedAfterMilliseconds = 5_000

  /// The pattern's events, one of each an episode: masked (the first tiles masked), cleared
  /// (nothing masked or searched for `patternClearedAfterMilliseconds`: a group unmasked and
  /// found again in between is the same pattern, not a new fault).
  func noteMask(now: Instant) {
    let masked = quarantines[0].masked | quarantines[1].masked
    if masked != 0 && !patternEpisode {
      patternEpisode = true
      post(.decoderPatternMasked)
    }
    if quarantines[0].isActive || quarantines[1].isActive {
      patternQuietSince = nil
    } else if patternEpisode && patternQuietSince == nil {
      patternQuietSince = now
    }
  }

  func checkPatternCleared(now: Instant) {
    guard patternEpisode, let since = patternQuietSince, now.milliseconds(since: since) >= Self.patternClearedAfterMilliseconds else { return }
    patternEpisode = false
    patternQuietSince = nil
    post(.decoderPatternCleared)
  }

  /// Where the masked tiles are, as STATUS names them (nil: none).
  public var maskedRegion: MaskedRegion? {
    // The first camera with a mask (a turnstile's exit camera is the second).
    let q = quarantines[0].masked != 0 ? quarantines[0] : quarantines[1]
    guard q.masked != 0, let b = PatternQuarantine.bounds(q.masked, width: viewSize.width, height: viewSize.height) else {
      return nil
    }
    return MaskedRegion(x: b.x, y: b.y, width: b.width, height: b.height, tiles: q.masked.nonzeroBitCount)
  }
}

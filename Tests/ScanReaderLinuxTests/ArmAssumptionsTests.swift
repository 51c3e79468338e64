import CSandbox
import Glibc
import ScanCore
import ScanTestSupport
import Testing

/// What differs on a Raspberry Pi's ARM and would pass unseen on x86_64 (docs/arm64.md, "What
/// differs on ARM"): `char` is unsigned, an atomic word must be aligned, and ordering between the
/// service and its decoder worker comes only from release and acquire (x86 orders every store:
/// ChokepointTests.sharedWordsOrdered holds the sources to it).
@Suite struct ArmAssumptionsTests {
  @Test("the C shims are built with char unsigned, as ARM's ABI has it (Package.swift), so these tests run them as a Pi would")
  func charIsUnsigned() {
    #expect(sg_sb_char_unsigned() == 1)
  }

  @Test("the decoder's shared words are 4-byte aligned in every layout, the frame 64-byte aligned; a misaligned word is refused")
  func sharedWordsAligned() {
    for offset in [DecoderChannel.offsetRequestSequence, DecoderChannel.offsetDoneSequence, DecoderChannel.offsetReady] {
      #expect(offset % 4 == 0, "offset \(offset)")
    }
    for (capacity, payload) in [(1, 1), (3, 7), (8, 1024), (64, 4093)] {
      let channel = DecoderChannel(maxWidth: 641, maxHeight: 479, capacity: capacity, payloadBytesMax: payload)
      #expect(channel.frameOffset % 64 == 0 && channel.totalBytes % 4096 == 0, "\(capacity) × \(payload)")
    }
    // The mapping itself is page aligned, so base + offset keeps the offset's alignment.
    let fd = sg_sb_memfd("scangate-arm-test", 8192)
    #expect(fd >= 0)
    guard fd >= 0, let base = sg_sb_map_shared(fd, 8192) else { return }
    defer {
      sg_sb_unmap(base, 8192)
      close(fd)
    }
    #expect(Int(bitPattern: base) % 4096 == 0)
    #expect(sg_sb_word_aligned(base + DecoderChannel.offsetDoneSequence) == 1)
    // What an unaligned word would be: refused (the atomics abort on it rather than split it).
    #expect(sg_sb_word_aligned(base + DecoderChannel.offsetDoneSequence + 1) == 0)
    #expect(sg_sb_word_aligned(base + 2) == 0)
  }
}

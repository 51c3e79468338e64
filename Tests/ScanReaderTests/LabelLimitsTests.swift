import ScanAccess
import ScanBase
import ScanReader
import ScanSim
import Testing

@Suite struct LabelLimitsTests {
  @Test("one label limit: the allow-list, the event record and the snapshot agree on 48 bytes")
  func agree() {
    #expect(LabelLimits.bytesMax == 48)
    #expect(AllowListLimits.labelBytesMax == LabelLimits.bytesMax)
    #expect(ScanEvent.labelBytesMax == LabelLimits.bytesMax)
    #expect(MemoryLayout<LabelLimits.Storage>.size == LabelLimits.bytesMax)
    #expect(MemoryLayout<ScanEvent.PayloadStorage>.size == ScanEvent.payloadBytesMax)
    #expect(MemoryLayout<SnapshotSymbol.PayloadStorage>.size == SnapshotSymbol.payloadBytesMax)
  }

  @Test("a label of the longest length the allow-list takes reaches an event whole; a longer copy is clipped")
  func longestLabel() {
    let longest = String(repeating: "L", count: 48)
    var list = AllowList(limits: AllowListLimits())
    #expect(list.load(Array("text:A label=\(longest)\n".utf8), digester: FixtureDigester(), nowUnixSeconds: 0) == nil)
    let (verdict, index) = list.decide(FixtureDigester().digest("A"), nowUnixSeconds: 0)
    #expect(verdict == .granted)
    var event = ScanEvent()
    var copied = [UInt8](repeating: 0, count: 64)
    let n = copied.withUnsafeMutableBytes { list.copyLabel(index!, into: $0) }
    #expect(n == 48)
    copied.withUnsafeBytes { event.setLabel(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    #expect(event.withLabel { Array($0) } == Array(longest.utf8))
    let tooLong = [UInt8](repeating: 0x4D, count: 60)
    tooLong.withUnsafeBytes { event.setLabel($0) }
    #expect(event.withLabel { Array($0) } == [UInt8](repeating: 0x4D, count: 48))
  }
}

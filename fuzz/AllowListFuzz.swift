// libFuzzer harness for the allow-list file parser (fixed tables, bounded limits).
import ScanCore
import ScanSim

nonisolated(unsafe) var table = AllowListTable(entriesMax: 64)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  let limits = AllowListLimits(entriesMax: 64, fileBytesMax: 1 << 16, lineBytesMax: 1024)
  _ = AllowListParser.parse(bytes, limits: limits, digester: FixtureDigester(), into: &table)
  precondition(table.count <= 64)
  return 0
}

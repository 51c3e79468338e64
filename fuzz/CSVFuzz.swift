// libFuzzer harness for the RFC 4180 reader and the import that reads people from it (the CLI's
// `allow-list import` and the console's IMPORT, which the web page feeds): bounded, never traps,
// and an import either refuses whole or leaves a list that loads, with every old line kept.
import ScanCore
import ScanSim

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  let limits = CSV.Limits(fileBytesMax: 4096, recordsMax: 16, fieldsMax: 8, fieldBytesMax: 64)
  if case .success(let records) = CSV.parse(bytes, limits: limits) {
    precondition(records.count <= 16)
    for record in records {
      precondition(record.count <= 8)
      for field in record { precondition(field.count <= 64) }
    }
    // What the writer writes from text fields, the reader reads back exactly.
    let text = records.map { $0.map { String(decoding: $0, as: UTF8.self) } }.filter { $0 != [""] }
    let written = Array(text.map { CSV.record($0) }.joined().utf8)
    if case .success(let back) = CSV.parseText(written, limits: CSV.Limits(fileBytesMax: 1 << 20, recordsMax: 16, fieldsMax: 8, fieldBytesMax: 1024)) {
      precondition(back == text)
    } else {
      preconditionFailure("the writer's output did not read back")
    }
  }
  let list = Array("# people\ntext:ALICE-0001 label=alice\nsha256:\(String(repeating: "ab", count: 32)) label=bob static=yes\n".utf8)
  let listLimits = AllowListLimits(entriesMax: 16, fileBytesMax: 8192, lineBytesMax: 1024)
  if let plan = try? AllowListImport.plan(
    csv: bytes, into: list, source: "fuzz", listPath: "(fuzz)", limits: listLimits, keepText: size % 3 == 0, removeMissing: size % 2 == 0,
    schedules: .noFile, digester: FixtureDigester())
  {
    var table = AllowList(limits: listLimits)
    precondition(table.validate(plan.text, digester: FixtureDigester(), schedules: .noFile) == nil, "an accepted import must load")
    precondition(plan.text.starts(with: Array("# people\n".utf8)), "an import keeps the file's own lines")
  }
  return 0
}

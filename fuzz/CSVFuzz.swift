// libFuzzer harness for the RFC 4180 reader (allow-list import): bounded, never traps.
import ScanCore

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
  return 0
}

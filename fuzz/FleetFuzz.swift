// libFuzzer harness for what the fleet link takes from the broker: bundle and command payloads
// (after the signature, still parsed as hostile), Home Assistant's command messages (never
// signed: the exact forms or nothing) and the nonce ledger's file.
import ScanCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  if case .success(let bundle) = FleetBundle.parse(bytes) {
    // What parses must print back to the same bundle.
    precondition((try? FleetBundle.parse(bundle.bytes).get()) == bundle)
    precondition(bundle.files.count <= FleetBundle.filesMax && bundle.version > 0)
  }
  if case .success(let command) = FleetCommand.parse(bytes) {
    precondition((try? FleetCommand.parse(command.bytes).get()) == command)
    var ledger = NonceLedger(capacity: 4)
    _ = ledger.admit(command, now: command.expiresUnixSeconds - 1)
    precondition(ledger.admit(command, now: command.expiresUnixSeconds - 1) != nil)  // never twice
  }
  for command in HomeAssistantCommand.allCases {
    guard case .success(let (request, code)) = HomeAssistantRequest.parse(command, bytes) else { continue }
    precondition(size <= HomeAssistantRequest.bytesMax && code.count <= HomeAssistantCode.digitsMax)
    precondition(code.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } && (code.isEmpty || command == .open))
    precondition((request == .open || request == .lock) == (command == .open))
  }
  var ledger = NonceLedger(capacity: 16)
  ledger.load(bytes)
  precondition(ledger.entries.count <= 16)
  return 0
}

import CLinux
import Glibc
import ScanConsole
import ScanCore
import ScanLinux
import ScanService
import ScanSim
import ScanTestSupport
import Testing

/// The console's PIN on a real loop with its allow-list file: the entry's `pin=` is
/// HMAC-SHA-256(key, "scangate-pin-v1" 0x00 digest pin), checked here with libsodium's HMAC over
/// that documented message; refused without a keypad's key, for an unknown label or a malformed
/// PIN; CLEAR takes it off; the PIN is in no reply and no record.
@Suite(.serialized) struct ConsolePinTests {
  func readFile(_ path: String) -> String { (try? readWholeFile(path, maxBytes: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? "" }

  @Test("PIN label=<label> <digits>|CLEAR: set under the keypad's key, taken off, refusals; never the PIN in a reply or a record")
  func pin() {
    let rig = ConsoleTests.Rig()
    let list = rig.directory + "/allow-list.txt"
    let client = rig.connect()
    #expect(client.command("PIN label=alice 2468").last?.hasPrefix("ERR 401") == true, "operators only")
    #expect(client.command("AUTH correct%20horse%20battery").last == "OK operator")
    let noKeypad = client.command("PIN label=alice 2468").last ?? ""
    #expect(noKeypad.hasPrefix("ERR 503 no keypad asks for a PIN"), "\(noKeypad)")
    let key = [UInt8](repeating: 0x5A, count: 32)
    rig.loop.helpers.pinVerifier = { digest, pin in key.withUnsafeBytes { PinMAC.verifier(key: $0, digest: digest, pin: pin) } }
    let set = client.command("PIN label=alice 2468").last ?? ""
    #expect(set.hasPrefix("OK #") && set.contains(" pin set for alice allow-list version ") && !set.contains("2468"), "\(set)")
    // The expected pin= from the documented message, with libsodium's HMAC-SHA-256.
    let digest = Array("ALICE".utf8).withUnsafeBytes { FixtureDigester().sha256($0) }
    let message = Array("scangate-pin-v1".utf8) + [0] + (0..<32).map { digest.byte($0) } + Array("2468".utf8)
    var mac = [UInt8](repeating: 0, count: 32)
    sg_hmac_sha256(key, key.count, message, message.count, &mac)
    #expect(readFile(list) == "text:ALICE label=alice pin=\(mac.map { String(format2: $0) }.joined())\n", "\(readFile(list))")
    for (line, want) in [
      ("PIN label=nobody 1234", "ERR 409"), ("PIN label=alice 123", "ERR 400"), ("PIN label=alice 12a4", "ERR 400"),
      ("PIN label=alice 1234567890123", "ERR 400"), ("PIN alice 1234", "ERR 400"),
    ] {
      let reply = client.command(line).last ?? ""
      #expect(reply.hasPrefix(want), "\(line): \(reply)")
    }
    #expect(client.command("PIN label=alice CLEAR").last?.contains("pin taken off alice") == true)
    #expect(readFile(list) == "text:ALICE label=alice\n")
    #expect(client.command("PIN label=alice CLEAR").last?.contains("has no PIN") == true)
    let records = rig.loop.engine.events.lines { e in
      e.kind == .command ? EventText.line(e, since: Instant(nanoseconds: 0), payloads: .shown) : nil
    }
    #expect(records.contains { $0.contains("PIN SET by ") } && records.contains { $0.contains("PIN CLEAR by ") }, "\(records)")
    #expect(!records.contains { $0.contains("2468") })
  }

  @Test("PASSES: the counted passes the reader remembers, by id, uses, first use and kept-until, the latest first; operators only")
  func passes() throws {
    let rig = ConsoleTests.Rig()
    let client = rig.connect()
    #expect(client.command("PASSES").last?.hasPrefix("ERR 401") == true, "operators only")
    #expect(client.command("AUTH correct%20horse%20battery").last == "OK operator")
    #expect(client.command("PASSES") == ["OK passes 0 of 0"], "no credentials configured: none")
    let verifier = CredentialSite().verifier()
    let store = try UsedCredentialFile(path: rig.directory + "/used-passes", capacity: 16)
    verifier.useStore = store
    rig.loop.engine.policy.credentials = verifier
    let bob = try #require(([0x67, 0x01] as [UInt8]).withUnsafeBytes { CredentialID($0) })
    let ann = try #require(([0xAB, 0xCD, 0xEF] as [UInt8]).withUnsafeBytes { CredentialID($0) })
    // 2026-12-01T08:00:00Z is 1796112000; 2026-12-02T08:00:00Z 1796198400.
    #expect(store.recordUse(bob, expires: 1_796_198_400, now: 1_796_112_000))
    #expect(store.recordUse(bob, expires: 1_796_198_400, now: 1_796_115_600))
    #expect(store.recordUse(ann, expires: 1_796_284_800, now: 1_796_198_400))
    #expect(
      client.command("PASSES") == [
        "| id=abcdef uses=1 first=2026-12-02T08:00:00Z until=2026-12-03T08:00:00Z",
        "| id=6701 uses=2 first=2026-12-01T08:00:00Z until=2026-12-02T08:00:00Z", "OK passes 2 of 2",
      ])
    #expect(client.command("PASSES 1").last == "OK passes 1 of 2")
    #expect(client.command("PASSES x").last?.hasPrefix("ERR 400") == true)
  }
}

extension String {
  fileprivate init(format2 byte: UInt8) {
    let digits = Array("0123456789abcdef")
    self = String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
  }
}

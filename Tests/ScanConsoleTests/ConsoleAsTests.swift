import ScanConsole
import ScanCore
import Testing

/// AS from another host: only a TLS client the console's client CA certified may name the person
/// it acts for (the web page on an office machine); any other remote client is refused.
@Suite struct ConsoleAsTests {
  @Test("AS from a remote address: refused; once its TLS certificate is verified (certify): names the session, recorded with the address")
  func remoteNeedsCertificate() {
    var rig = ClockCommandTests.Rig()
    #expect(rig.say("AUTH sesame-open", slot: 1) == "OK operator\n")
    #expect(rig.say("AS ada operator", slot: 1) == "ERR 403 AS is for the Unix socket and certified TLS clients\n")
    rig.commands.certify(1)
    #expect(rig.say("AS ada operator", slot: 1) == "OK as web:ada operator\n")
    #expect(rig.host.recorded.last?.2 == "AS operator web:ada (10.0.1.5)", "\(rig.host.recorded)")
    // A certified client is still a viewer until it AUTHs, and AS never raises it.
    rig.commands.opened(2, peer: .ipv4(0x0A00_0106), transport: .tcp)
    rig.commands.certify(2)
    #expect(rig.say("AS bob operator", slot: 2).hasPrefix("ERR 401"))
    #expect(rig.say("OPEN", slot: 2).hasPrefix("ERR 401"))
  }
}

import ScanBase
import Testing

/// Boot safety: what a Pi's power-on pulls do to a relay before the service holds the pin.
@Suite struct BootSafetyTests {
  @Test("Pi boot pulls: BCM 0-8 up, 9-27 down, only on the BCM chips")
  func piPulls() {
    #expect(BootSafety.piDefaultPull(chipLabel: "pinctrl-bcm2711", offset: 4) == .pullUp)
    #expect(BootSafety.piDefaultPull(chipLabel: "pinctrl-bcm2835", offset: 17) == .pullDown)
    #expect(BootSafety.piDefaultPull(chipLabel: "gpio-sim.0-node0", offset: 17) == nil)
    #expect(BootSafety.piDefaultPull(chipLabel: "pinctrl-bcm2711", offset: 40) == nil)
  }

  @Test("an active-low relay on a pulled-down pin is energised at boot; an active-high one is not")
  func energised() {
    let idle17 = BootSafety.idleLevel(bias: nil, piDefault: .pullDown)
    #expect(idle17 == 0)
    #expect(BootSafety.energised(level: idle17, activeLow: true) == true)
    #expect(BootSafety.energised(level: idle17, activeLow: false) == false)
    #expect(BootSafety.energised(level: BootSafety.idleLevel(bias: .pullUp, piDefault: .pullDown), activeLow: false) == true)
    #expect(BootSafety.energised(level: nil, activeLow: false) == nil)
    #expect(BootSafety.configLine(offset: 17, activeLow: false) == "gpio=17=op,dl")
    #expect(BootSafety.configLine(offset: 4, activeLow: true) == "gpio=4=op,dh")
  }
}

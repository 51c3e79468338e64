/// What a domain's section is checked against beyond itself: the facts of the whole reader a
/// section may consult, never another domain's settings.
package struct ReaderFacts: Sendable {
  /// Lines are requested from the kernel (`gpio.backend = "gpiod"`), not simulated.
  package var gpiod: Bool
  /// The access panel decides (`panel.mode = "panel"`): it drives the door, the reader's lamps
  /// and its PIN checks.
  package var panelDecides: Bool
  /// In panel mode over OSDP the keypad's keys go to the panel (osdp_KEYPAD); over Wiegand they
  /// cannot reach it.
  package var keysToPanel: Bool
  /// The audit log's path ("": no log) and the site key's file ("": none).
  package var logPath: String
  package var siteKeyFile: String

  package init(gpiod: Bool, panelDecides: Bool, keysToPanel: Bool, logPath: String, siteKeyFile: String) {
    self.gpiod = gpiod
    self.panelDecides = panelDecides
    self.keysToPanel = keysToPanel
    self.logPath = logPath
    self.siteKeyFile = siteKeyFile
  }
}

/// A domain's section of config.toml, kept beside the domain's code (ESPHome's component: schema
/// and code side by side): its keys, the GPIO lines it requests, and what it refuses. ScanConfig
/// holds one value per domain, and its schema is a loop over them: a new domain is one entry
/// there, never a new branch in the schema's checks.
package protocol ConfigSection: Sendable {
  /// Every key of the section, with its kind and where it lands.
  static var configKeys: [ConfigKey<Self>] { get }
  /// The GPIO lines the section requests on `gpio.chip`, by key (-1: not wired).
  var linesInUse: [(key: String, offset: Int)] { get }
  /// What the section cannot be, alone or on this reader, each naming its key and line.
  func configProblems(_ facts: ReaderFacts, line: ConfigLineLookup) -> [ConfigError]
  /// The section shows what the reader's chirps would have said (a buzzer-free reader): the
  /// grant, deny and PIN-prompt patterns are then silent.
  var replacesChirps: Bool { get }
}

extension ConfigSection {
  package var linesInUse: [(key: String, offset: Int)] { [] }
  package func configProblems(_ facts: ReaderFacts, line: ConfigLineLookup) -> [ConfigError] { [] }
  package var replacesChirps: Bool { false }
}

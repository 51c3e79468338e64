import Glibc
import ScanCore
import ScanLinux
import ScanService
import ScanSim

/// The soak's scenes with signed passes: the listed codes become a signed pass (or a rotating
/// one) from a site made for the run, the unknown code stays unknown.
enum SoakPasses {
  static func scenes(
    rotating: Bool, in directory: String, config: inout ScanConfig, width: Int, height: Int
  ) throws
    -> ([[UInt8]], [ScriptedFrameSource.Step])
  {
    let issuer = CredentialIssuer.randomBytes(32), site = CredentialIssuer.randomBytes(32)
    let kid = Array("soak".utf8)
    try writeFileAtomically(
      directory + "/trust.toml", Array("[issuer.soak]\ned25519 = \"\(Hex.string(CredentialIssuer.issuerPublicKey(issuer)!))\"\n".utf8))
    try SecretFile.create(directory + "/site.key", Array((Hex.string(site) + "\n").utf8))
    config.credentials.trustFile = directory + "/trust.toml"
    config.credentials.siteKeyFile = directory + "/site.key"
    config.stateDirectorySetting = directory  // replay steps, used passes, revocation version
    // A soak runs for minutes: the window is wide so a rotating code stays within it, and
    // every later showing is a full verification ending in `denied-replayed`.
    config.credentials.totpSkewSteps = 3
    let now = Int64(time(nil))
    var texts: [String] = []
    for (n, label) in ["alice", "dave"].enumerated() {
      var c = PassClaims(subject: label, expires: now + 86_400, id: [0x50, UInt8(n)])
      c.label = label
      if rotating {
        c.rotatingDigits = 6
        c.sitePublicKey = CredentialIssuer.sitePublicKey(site)!
      }
      let pass = try CredentialIssuer.issue(c, kid: kid, issuerSeed: issuer)
      if rotating {
        let code = pass.seed.withUnsafeBytes {
          TOTP.value(key: $0, step: now / 30, digits: 6, crypto: SodiumCredentialCrypto(siteSecretKey: nil))
        }
        texts.append(pass.presented(totp: code))
      } else {
        texts.append(pass.staticText)
      }
    }
    let empty = DemoCommand.background(width: width, height: height)
    var frames = [empty]
    var script: [ScriptedFrameSource.Step] = []
    let scenes: [(String, ImageVariant)] = [(texts[0], .upright), ("MALLORY-9999", .upright), (texts[1], .inverted)]
    for (n, scene) in scenes.enumerated() {
      let code = scene.0.hasPrefix("SG1") ? renderQRCode(text: scene.0, scale: 4)!.image : renderQRCode(Array(scene.0.utf8), scale: 6)!
      frames.append(DemoCommand.place(code, variant: scene.1, on: empty, width: width, height: height, shift: n * 30))
      script += Array(repeating: .frame(n + 1), count: 10)
      script += Array(repeating: .frame(0), count: 200)
    }
    return (frames, script)
  }
}

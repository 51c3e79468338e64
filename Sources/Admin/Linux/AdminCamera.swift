import Glibc
import ScanConsoleLinux
import ScanCore

/// The camera's aiming picture on the page (docs/admin.md, "The web page"): the console's
/// SNAPSHOT for the page's named session, so every code the reader found is blanked and no label
/// carries a payload; the scan zone and the codes' outlines stay, which is what aiming needs.
extension AdminSite {
  func cameraPage(_ session: AdminSessions.Session) -> HTTPResponse {
    guard session.role >= .operator else { return page("Camera", body: AdminPages.viewerOnly(), session: session, status: 403) }
    return page("Camera", body: AdminPages.camera(), session: session)
  }

  /// The picture itself (image/png), taken when asked.
  func cameraPicture(_ session: AdminSessions.Session) -> HTTPResponse {
    guard session.role >= .operator else { return .text(403, "an operator's page: this account is a viewer\n") }
    for _ in 0..<10 {
      guard let reply = ask(session, ["SNAPSHOT"])?.first else { return .text(503, "the reader's console cannot be reached\n") }
      if reply.status.hasPrefix("ERR 503 a snapshot is being taken") {
        usleep(300_000)
        continue
      }
      guard reply.status.hasPrefix("OK"), let png = ConsoleClient.decodeBase64(reply.body.joined()) else {
        return .text(503, reply.status + "\n")
      }
      return HTTPResponse(status: 200, contentType: "image/png", headers: ["Cache-Control: no-store"], body: png)
    }
    return .text(503, "the camera is busy: try again\n")
  }
}

extension AdminPages {
  static func camera() -> String {
    """
    <h2>Camera</h2>
    <p class="card">The camera's picture now, to aim it: the scan zone framed, each code it found outlined (green:
    it would open, red: it would not) and blanked, so the picture never carries a pass.</p>
    <p><button id="refresh" class="refresh">Take a new picture</button></p>
    <img id="camera" class="camera" src="/camera.png" alt="The camera's picture">
    """
  }
}

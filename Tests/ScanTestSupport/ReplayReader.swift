import Glibc
import ScanLinux

/// A folder for the built binary to serve as a reader: `frame.png` (a QR code for `payload`)
/// replayed as its camera, `allow-list.txt` with `allowList`, the console's secret file (0600),
/// and `config.toml` with the camera, allow-list, simulated GPIO and inline decoder sections,
/// then `more` (further keys of [gpio], then other sections). Returns the folder and the config.
package func replayReader(
  _ tag: String, payload: String, allowList: String, secret: String = "correct horse battery staple", fps: Int = 20,
  _ more: (String) -> String
) -> (directory: String, config: String) {
  let dir = temporaryDirectory(tag)
  _ = writePNG(path: dir + "/frame.png", pixels: qrFrame(payload).pixels, width: 640, height: 480, components: 1)
  writeFile(dir + "/allow-list.txt", allowList)
  writeFile(dir + "/secret", secret + "\n")
  chmod(dir + "/secret", 0o600)
  writeFile(
    dir + "/config.toml",
    """
    [camera]
    source = "replay"
    replay_path = "\(dir)"
    replay_fps = \(fps)
    [allow_list]
    path = "\(dir)/allow-list.txt"
    [gpio]
    backend = "sim"
    \(more(dir))
    """)
  return (dir, dir + "/config.toml")
}

/// A replayed reader showing HANK-0001 (hank on the list by default): a 500 ms presence repeat,
/// the inline decoder, its audit log in its own folder (`state`: under `<dir>/state`, made, with
/// `[state] directory` there), a console on a free loopback port; then `more`.
package func hankReader(
  _ tag: String, allowList: String = "text:HANK-0001 label=hank\n", state: Bool = false, _ more: @escaping (String) -> String = { _ in "" }
) -> (directory: String, config: String) {
  let made = replayReader(tag, payload: "HANK-0001", allowList: allowList) { dir in
    let folder = state ? dir + "/state" : dir
    return """
      relay_pulse_ms = 100
      [presence]
      repeat_ms = 500
      leave_after_ms = 200
      [decoder]
      isolation = "inline"
      \(state ? "[state]\ndirectory = \"\(folder)\"" : "")
      [log]
      path = "\(folder)/audit.db"
      [console]
      listen = ["127.0.0.1:0"]
      secret_file = "\(dir)/secret"
      \(more(dir))
      """
  }
  if state { _ = mkdir(made.directory + "/state", 0o750) }
  return made
}

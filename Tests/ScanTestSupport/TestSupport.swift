import CLinux
import Glibc
import ScanCore
import ScanLinux
import ScanService
import Synchronization

/// Where the package is checked out.
package let packageRoot: String = {
  var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
  parts.removeLast(3)  // Tests/ScanTestSupport/TestSupport.swift
  return parts.joined(separator: "/")
}()

/// ../shared/corpus beside the checkout, or $SCANGATE_CORPUS; nil when absent.
package let corpusRoot: String? = {
  if let env = getenv("SCANGATE_CORPUS") { return String(cString: env) }
  let path = packageRoot + "/../shared/corpus"
  return isDirectory(path) ? path : nil
}()

/// A fresh temporary directory.
package func temporaryDirectory(_ tag: String = "test") -> String {
  var template = Array("/tmp/scangate-\(tag)-XXXXXX".utf8CString)
  let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
  madeDirectories.withLock { made in
    if made.isEmpty && getenv("SCANGATE_KEEP_TEST_DIRS") == nil { atexit { removeMadeDirectories() } }
    made.append(path)
  }
  return path
}

/// Every directory `temporaryDirectory` made, removed when the test process exits (unless
/// SCANGATE_KEEP_TEST_DIRS is set): a run leaves nothing behind in /tmp, whichever test forgot.
private let madeDirectories = Mutex<[String]>([])

private func removeMadeDirectories() {
  for path in madeDirectories.withLock({ $0 }) {
    chmod(path, 0o700)
    removeTree(path)
  }
}

package func removeTree(_ path: String) {
  if let names = try? listDirectory(path) {
    for name in names {
      let child = path + "/" + name
      if isDirectory(child) { removeTree(child) } else { unlink(child) }
    }
  }
  rmdir(path)
}

package func writeFile(_ path: String, _ text: String) {
  try! writeFileAtomically(path, Array(text.utf8))
}

package func writeFile(_ path: String, bytes: [UInt8]) {
  try! writeFileAtomically(path, bytes)
}

/// A 640×480 frame with a QR code for `payload` on a light background; inverted or mirrored
/// as a phone screen may show it.
package func qrFrame(
  _ payload: String, variant: ImageVariant = .upright, width: Int = 640, height: Int = 480, scale: Int = 6, at origin: (Int, Int)? = nil
) -> GrayImage {
  var code = renderQRCode(Array(payload.utf8), scale: scale)!
  if variant.isMirrored { code = code.mirrored() }
  if variant.isInverted { code = code.inverted() }
  var pixels = [UInt8](repeating: 190, count: width * height)
  let ox = origin?.0 ?? (width - code.width) / 2, oy = origin?.1 ?? (height - code.height) / 2
  for y in 0..<code.height {
    for x in 0..<code.width { pixels[(y + oy) * width + x + ox] = code.pixels[y * code.width + x] }
  }
  return GrayImage(width: width, height: height, pixels: pixels)
}

/// The scangate executable next to the test binary.
package let scangateBinary: String = {
  let me = CommandLine.arguments[0]
  var parts = me.split(separator: "/", omittingEmptySubsequences: false)
  while let last = parts.last, !last.hasSuffix(".xctest") && parts.count > 1 { parts.removeLast() }
  parts.removeLast()
  return parts.joined(separator: "/") + "/scangate"
}()

/// A child process with its standard output and error captured into a file.
package struct Child {
  package let pid: pid_t
  package let outputPath: String

  /// Starts `arguments` with stdout+stderr to a temporary file.
  package static func start(_ arguments: [String], environment extra: [String] = []) -> Child {
    let output = temporaryDirectory("child") + "/output.txt"
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var pid: pid_t = 0
    let argv = arguments.map { strdup($0) } + [nil]
    var inherited: [String] = []
    var e = environ
    while let entry = e.pointee {
      inherited.append(String(cString: entry))
      e += 1
    }
    let envp = (inherited + extra).map { strdup($0) } + [nil]
    let rc = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
    precondition(rc == 0, "posix_spawn \(arguments[0]) failed: \(rc)")
    argv.forEach { free($0) }
    envp.forEach { free($0) }
    posix_spawn_file_actions_destroy(&actions)
    return Child(pid: pid, outputPath: output)
  }

  /// Waits for exit; returns the exit status (128 + signal when killed).
  package func wait(timeoutSeconds: Int = 60) -> Int32 {
    var status: Int32 = 0
    for _ in 0..<(timeoutSeconds * 100) {
      let r = waitpid(pid, &status, WNOHANG)
      if r == pid {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
      }
      usleep(10_000)
    }
    kill(pid, SIGKILL)
    waitpid(pid, &status, 0)
    return -1
  }

  package var output: String {
    (try? readWholeFile(outputPath, maxBytes: 16 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
  }

  /// Waits until the output contains `text`.
  package func waitForOutput(_ text: String, timeoutSeconds: Int = 30) -> Bool {
    waitForOutput(text, count: 1, timeoutSeconds: timeoutSeconds)
  }

  /// Waits until `text` is in the output at least `count` times (a loaded machine is slow, not
  /// wrong: the bound is generous, and met at once on a quick one).
  package func waitForOutput(_ text: String, count: Int, timeoutSeconds: Int = 30) -> Bool {
    for _ in 0..<(timeoutSeconds * 50) {
      if output.ranges(of: text).count >= count { return true }
      usleep(20_000)
    }
    return false
  }
}

/// Runs a command to completion; returns (status, output).
package func runCommand(_ arguments: [String], timeoutSeconds: Int = 120) -> (Int32, String) {
  let child = Child.start(arguments)
  let status = child.wait(timeoutSeconds: timeoutSeconds)
  let output = child.output
  removeTree(String(child.outputPath.dropLast("/output.txt".count)))
  return (status, output)
}

/// A TCP listener of the test's own on 127.0.0.1 at a port the kernel picks (no test binds a
/// fixed one): its descriptor and port, or nil when it could not be made. The caller closes it.
package func loopbackListener() -> (fd: Int32, port: Int)? {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { return nil }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 4) == 0 && getsockname(fd, $0, &length) == 0 }
  }
  guard bound else {
    close(fd)
    return nil
  }
  return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A reader replaying `frames` frames at 30 fps from `dir`/frames (blank, or the code `shows`
/// names for a frame range), its allow-list holding alice, its log and state in `dir`, simulated
/// GPIO, no console, decoding inline, and an optional lockdown latch in the state directory: the
/// configuration and options `Service.run` takes for the in-process service tests.
package func replayReader(
  _ dir: String, frames: Int, shows: [(Range<Int>, String)], latch: [UInt8]? = nil
) -> (ScanConfig, Service.Options) {
  _ = mkdir(dir + "/frames", 0o700)
  let blank = GrayImage(width: 640, height: 480, pixels: [UInt8](repeating: 190, count: 640 * 480))
  let codes = shows.map { ($0.0, qrFrame($0.1)) }
  for i in 0..<frames {
    let image = codes.first { $0.0.contains(i) }?.1 ?? blank
    let written = writePNG(path: dir + "/frames/" + (i < 10 ? "0" : "") + "\(i).png", pixels: image.pixels, width: 640, height: 480, components: 1)
    precondition(written, "the replay's frame \(i) was not written in \(dir)")
  }
  writeFile(dir + "/allow.txt", "text:ALICE-0001 label=alice\n")
  if let latch { writeFile(dir + "/lockdown", bytes: latch) }
  var config = ScanConfig()
  config.camera.source = .replay
  config.camera.replayPath = dir + "/frames"
  config.camera.replayFPS = 30
  config.camera.replayLoop = false
  config.gpio.backend = .sim
  config.allowListPath = dir + "/allow.txt"
  config.log.path = dir + "/audit.db"
  config.stateDirectorySetting = dir
  config.console.listen = []
  config.decoder.isolation = .inline
  var options = Service.Options()
  options.quiet = true
  options.handleSignals = false
  return (config, options)
}

import CLinux
import Glibc
import ScanCore
import ScanLoop
import ScanPlatform

/// The OSDP link to an access-control panel: the serial port as a poll participant, the
/// peripheral state machine (ScanCore) with libcrypto's AES, and the panel's commands turned
/// into buzzer patterns and events. In panel mode it is also the engine's `PanelForwarder`:
/// a granted pass's card number waits here for the panel's next POLL.
///
/// Everything is allocated in `init`; reading, answering and forwarding allocate nothing
/// (a KEYSET writes the key file, once, at installation).
public final class OSDPPanelLink: PollParticipant, PanelForwarder, KeypadSink {
  public let settings: PanelSettings
  public let peripheral: OSDPPeripheral<OSDPLibcrypto>
  private let descriptor: Int32
  private let ring: EventRing?
  private let clock: any MonotonicClock
  private let wall: any WallClock
  private let readBuffer: UnsafeMutableRawBufferPointer
  private var token = PollSet.Token.none
  private var online = false
  private var secureReported = false
  public private(set) var lastPoll: Instant? = nil
  public private(set) var writeFailures = 0
  public private(set) var keyStoreFailures = 0
  /// Whether the driver took RS-485 direction control (TIOCSRS485).
  public private(set) var rs485 = false
  private var pendingPattern: BuzzerPattern? = nil
  /// What a panel's temporary green and red LED play (`gpio.grant_pattern`, `deny_pattern`).
  public var grantPattern = BuzzerPattern.grant
  public var denyPattern = BuzzerPattern.deny
  /// The address and baud the link uses now (a panel's COMSET changes them).
  public private(set) var address: Int
  public private(set) var baud: Int
  /// Why the COMSET file was not used or not written (the link keeps its settings), for STATUS.
  public private(set) var comFileProblem: String? = nil

  /// Opens the port and reads the key file. Errors name the port or the file, never the key.
  public init(
    settings: PanelSettings, ring: EventRing?, clock: any MonotonicClock, wall: any WallClock, identity: OSDPPeripheralSettings? = nil
  ) throws(FileError) {
    self.settings = settings
    self.ring = ring
    self.clock = clock
    self.wall = wall
    var pd = identity ?? OSDPPeripheralSettings()
    var address = settings.osdpAddress, baud = settings.osdpBaud
    if !settings.comFile.isEmpty {
      do throws(FileError) {
        if let com = try Self.readCom(settings.comFile) { (address, baud) = (com.address, com.baud) }
      } catch { comFileProblem = error.description }
    }
    self.address = address
    self.baud = baud
    pd.address = UInt8(address)
    pd.baud = UInt32(baud)
    pd.installMode = settings.installMode
    pd.enforceSecure = settings.enforceSecure
    var key: [UInt8]? = nil
    if !settings.scbkFile.isEmpty {
      do { key = try Self.readKey(settings.scbkFile) } catch {
        // A missing key file is fine in install mode: the panel installs one.
        if !(settings.installMode && error.reason.contains("No such file")) { throw error }
      }
    }
    defer { if key != nil { key!.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } } }
    let cipher = OSDPLibcrypto()
    peripheral =
      if let key { key.withUnsafeBytes { OSDPPeripheral(settings: pd, key: $0, cipher: cipher) } } else {
        OSDPPeripheral(settings: pd, key: nil, cipher: cipher)
      }
    let fd: Int32
    do { fd = try SerialPort.open(path: settings.osdpPort, baud: baud, nonBlocking: true) } catch {
      throw FileError(path: settings.osdpPort, reason: error.description)
    }
    descriptor = fd
    if settings.osdpRS485 { rs485 = (try? syscall("TIOCSRS485 \(settings.osdpPort)", { sg_tty_rs485_enable(fd) })) != nil }
    readBuffer = .allocate(byteCount: 512, alignment: 16)
  }

  deinit {
    closeDescriptor(descriptor)
    readBuffer.deallocate()
  }

  /// A panel's osdp_COMSET, its COM reply sent: the line moves to the new baud once that reply
  /// has left (tcdrain: a few bytes, once, at installation), and the settings are kept.
  private func applyCom(address newAddress: Int, baud newBaud: Int) {
    address = newAddress
    if newBaud != baud {
      _ = try? syscall("tcdrain \(settings.osdpPort)", { tcdrain(descriptor) })
      do { _ = try syscall("set \(newBaud) baud", { sg_tty_configure_raw(descriptor, UInt32(newBaud)) }) } catch {
        // The port stays at its rate; nothing is kept that the line does not do.
        writeFailures += 1
        comFileProblem = "the port would not move to \(newBaud) baud: \(error.code)"
        peripheral.lineStayed(at: UInt32(baud))
        return
      }
      baud = newBaud
    }
    guard !settings.comFile.isEmpty else { return }
    do throws(FileError) { try Self.storeCom(address: address, baud: baud, path: settings.comFile) } catch {
      comFileProblem = error.description
    }
  }

  /// Reads the COMSET file: one line `address=N baud=N`; nil when there is none yet. A file that
  /// does not parse is refused whole (the configured address and baud stay).
  static func readCom(_ path: String) throws(FileError) -> (address: Int, baud: Int)? {
    guard fileExists(path) else { return nil }
    let text = try readWholeFile(path, maxBytes: 256)
    var address: Int? = nil, baud: Int? = nil
    for field in String(decoding: text, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }) {
      let parts = field.split(separator: "=", maxSplits: 1)
      guard parts.count == 2, let value = Int(parts[1]) else { throw FileError(path: path, reason: "not address=N baud=N") }
      switch parts[0] {
      case "address": address = value
      case "baud": baud = value
      default: throw FileError(path: path, reason: "unknown field \(parts[0].prefix(16))")
      }
    }
    guard let address, let baud, (0...126).contains(address), PanelSettings.bauds.contains(baud) else {
      throw FileError(path: path, reason: "wants address 0-126 and one of the OSDP bauds")
    }
    return (address, baud)
  }

  static func storeCom(address: Int, baud: Int, path: String) throws(FileError) {
    try writeFileAtomically(path, Array("address=\(address) baud=\(baud)\n".utf8), mode: 0o600)
  }

  /// Reads a key file: 32 hex digits (16 bytes), under the secret-file rules.
  public static func readKey(_ path: String) throws(FileError) -> [UInt8] {
    var text = try SecretFile.read(path)
    defer { text.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    guard text.count == 32 else { throw FileError(path: path, reason: "wants 32 hex digits (a 16-byte SCBK), got \(text.count) bytes") }
    var key = [UInt8](repeating: 0, count: 16)
    let ok = text.withUnsafeBytes { t in
      key.withUnsafeMutableBytes { k in Result { () throws(Hex.DecodeError) in try Hex.decode(t, into: k) } }
    }
    guard case .success = ok else { throw FileError(path: path, reason: "is not 32 hex digits") }
    return key
  }

  /// Replaces the key file with `key` (`SecretFile.replace`: written whole as a secret file,
  /// synced, renamed into place, the directory synced), so the key survives a power cut and,
  /// with it, the end of install mode at the next start.
  static func storeKey(_ key: UnsafeRawBufferPointer, path: String) throws(FileError) {
    let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    var text = [UInt8](repeating: 0, count: 33)
    for i in 0..<16 {
      text[2 * i] = hexDigits[Int(key[i] >> 4)]
      text[2 * i + 1] = hexDigits[Int(key[i] & 15)]
    }
    text[32] = 0x0A
    defer { text.withUnsafeMutableBytes { sg_memzero($0.baseAddress, $0.count) } }
    try SecretFile.replace(path, text)
  }

  // MARK: PanelForwarder

  public func forward(_ decision: AccessDecision) -> Bool {
    let now = Int64(clock.now().nanoseconds / 1_000_000)
    guard let card = decision.card, peripheral.queueCard(card, nowMilliseconds: now) else { return false }
    var e = ScanEvent()
    e.kind = .panelCard
    e.code = UInt16(card.bitCount)
    let name = card.format.staticName
    e.setPayload(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    record(e)
    return true
  }

  // MARK: KeypadSink

  /// A key typed on the reader's keypad, for the panel's next POLL (osdp_KEYPAD).
  public func forward(_ key: KeypadKey) -> Bool {
    peripheral.queueKey(key.osdpByte, nowMilliseconds: Int64(clock.now().nanoseconds / 1_000_000))
  }

  // MARK: PollParticipant

  public var pollCapacity: Int { 1 }

  public func prepare(_ poll: PollSet, now: Instant) -> Instant? {
    token = poll.add(descriptor, events: Int16(POLLIN))
    return now.adding(milliseconds: 100)  // stale half-packets, the offline timeout
  }

  public func service(_ poll: PollSet, now: Instant, requests: LoopRequests) {
    let milliseconds = Int64(now.nanoseconds / 1_000_000)
    if poll.revents(token) != 0 {
      for _ in 0..<8 {
        // EAGAIN: nothing now; errors: the next poll reports them again.
        guard case .done(let n)? = try? syscallRetrying("read \(settings.osdpPort)", { Glibc.read(descriptor, readBuffer.baseAddress, readBuffer.count) }),
          n > 0
        else { break }
        peripheral.receive(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]), nowMilliseconds: milliseconds) { reply in
          let sent = try? syscallRetrying("write \(settings.osdpPort)", { Glibc.write(descriptor, reply.baseAddress, reply.count) })
          guard case .done(reply.count)? = sent else {
            writeFailures += 1
            return
          }
        }
        if n < readBuffer.count { break }
      }
    }
    peripheral.tick(nowMilliseconds: milliseconds)
    followPanel(now: now, requests: requests)
  }

  /// The panel's commands, the link's state changes: patterns for the buzzer, events.
  private func followPanel(now: Instant, requests: LoopRequests) {
    if let polled = peripheral.lastPollMilliseconds {
      let at = Instant(nanoseconds: UInt64(polled) * 1_000_000)
      if lastPoll != at {
        lastPoll = at
        if !online {
          online = true
          record(kind: .panelLink, code: 1)
        }
      }
    }
    if online, let last = lastPoll, now.nanoseconds > last.nanoseconds + UInt64(settings.offlineAfterMilliseconds) * 1_000_000 {
      online = false
      record(kind: .panelLink, code: 0)
    }
    for _ in 0..<8 {
      guard let action = peripheral.takeAction() else { break }
      switch action {
      case .secureChannel(let up):
        if up != secureReported {
          secureReported = up
          record(kind: .panelSecure, code: up ? (peripheral.secureChannelUsesDefaultKey ? 2 : 1) : 0)
        }
      case .buzzer(let tone, let on, let off, let count):
        record(kind: .panelCommand, code: 0x6A)
        guard tone == 2, on > 0 else { break }
        var pattern = BuzzerPattern.grant
        let repeats = min(Int(count == 0 ? 1 : count), BuzzerPattern.stepsMax / 2)
        pattern.count = 0
        for r in 0..<repeats {
          pattern.steps[pattern.count] = UInt16(on) * 100
          pattern.count += 1
          if r < repeats - 1 {
            pattern.steps[pattern.count] = UInt16(max(off, 1)) * 100
            pattern.count += 1
          }
        }
        requests.post(.play(pattern))
      case .led(_, let color, _, _, _, let temporary, _):
        record(kind: .panelCommand, code: 0x69)
        // The reader has no LED of its own: a temporary green or red from the panel is its
        // verdict, shown with the grant or deny sound.
        if temporary && color == 2 { requests.post(.play(grantPattern)) }
        if temporary && color == 1 { requests.post(.play(denyPattern)) }
      case .output:
        record(kind: .panelCommand, code: 0x68)
      case .comset(let newAddress, let newBaud):
        record(kind: .panelCommand, code: 0x6E)
        applyCom(address: Int(newAddress), baud: Int(newBaud))
      case .keyset:
        var stored = false
        if !settings.scbkFile.isEmpty {
          stored = peripheral.withNewKey { key in
            do throws(FileError) {
              try Self.storeKey(key, path: settings.scbkFile)
              return true
            } catch { return false }
          }
        }
        if !stored { keyStoreFailures += 1 }
        record(kind: .panelKey, code: stored ? 1 : 0)
      }
    }
  }

  private func record(kind: EventKind, code: UInt16) {
    var e = ScanEvent()
    e.kind = kind
    e.code = code
    record(e)
  }

  private func record(_ event: ScanEvent) {
    guard let ring else { return }
    var e = event
    e.monotonic = clock.now()
    e.wallNanoseconds = wall.unixNanoseconds()
    _ = ring.append(e)
  }

  /// One line for STATUS and the console: mode, link, last poll, secure channel, last card.
  public func statusLine(now: Instant) -> String {
    var s = "panel mode=\(settings.mode.rawValue) osdp addr=\(address) baud=\(baud)"
    s += online ? " online" : " offline"
    if let last = lastPoll { s += " last_poll=\(now.microseconds(since: last) / 1000)ms" } else { s += " last_poll=never" }
    s += peripheral.secureChannelActive ? (peripheral.secureChannelUsesDefaultKey ? " secure=default-key" : " secure=up") : " secure=down"
    if peripheral.installMode { s += " install_mode=on" }
    if peripheral.installModeIgnored { s += " install_mode=\"ignored: a key is installed\"" }
    if let card = peripheral.lastCardSent { s += " last_card=\(card.format.name)-bit" } else { s += " last_card=none" }
    s += " cards=\(peripheral.cardsSent) naks=\(peripheral.naksSent) bad_checks=\(peripheral.badChecks)"
    if peripheral.keysSent > 0 || peripheral.keysDropped > 0 { s += " keys=\(peripheral.keysSent) keys_dropped=\(peripheral.keysDropped)" }
    if let comFileProblem { s += " com_file_problem=\"\(comFileProblem.prefix(80))\"" }
    return s
  }
}

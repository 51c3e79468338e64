import CLinux
import CTLS
import Glibc
import ScanConsole
import ScanCore
import ScanPlatform

extension ConsoleServer {
  // MARK: - Bulk replies

  /// Starts sending `data` to client `i` as base64 body lines, then `trailer` as the status line.
  /// Lines go out as buffer space frees up, so a large reply never needs a large buffer.
  public func startBulk(_ i: Int, data: [UInt8], trailer: String) {
    bulkClient = i
    bulkData = data
    bulkOffset = 0
    bulkTrailer = trailer
    pumpBulk()
  }

  /// Whether a bulk reply is still being sent.
  public var bulkActive: Bool { bulkClient >= 0 }

  func pumpBulk() {
    let i = bulkClient
    guard i >= 0 else { return }
    guard clients[i].fd >= 0 else { endBulk(); return }
    let lineBytes = 57  // 76 base64 characters
    while bulkOffset < bulkData.count {
      let free = settings.clientOutputBytes - (clients[i].outputEnd - clients[i].outputStart)
      guard free >= 160 else { return }  // wait for POLLOUT
      let end = min(bulkData.count, bulkOffset + lineBytes)
      let start = bulkOffset
      bulkData.withUnsafeBytes { raw in
        write(i) { w in
          w.write("| ")
          w.writeBase64(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
          w.newline()
        }
      }
      bulkOffset = end
      guard clients[i].fd >= 0 else { endBulk(); return }
    }
    let trailer = bulkTrailer
    write(i) { w in
      w.write(trailer)
      w.newline()
    }
    endBulk()
  }

  func endBulk() {
    bulkClient = -1
    bulkData = []
    bulkOffset = 0
  }

  /// Sends what client `i` has pending, as far as the socket takes it now.
  func flush(_ i: Int) {
    if clients[i].tls != nil {
      flushTLS(i)
      return
    }
    while clients[i].fd >= 0 && clients[i].outputStart < clients[i].outputEnd {
      let base = i * settings.clientOutputBytes
      let start = output.baseAddress! + base + clients[i].outputStart
      let length = clients[i].outputEnd - clients[i].outputStart
      let fd = clients[i].fd
      let n: IOResult<Int>
      do {
        n = try syscallRetrying(
          "console write",
          {
            clients[i].isSerial ? Glibc.write(fd, start, length) : Glibc.send(fd, start, length, Int32(MSG_NOSIGNAL))
          })
      } catch {
        disconnect(i)
        return
      }
      guard case .done(let sent) = n else { return }
      clients[i].outputStart += sent
    }
    if clients[i].fd >= 0 && clients[i].outputStart == clients[i].outputEnd {
      clients[i].outputStart = 0
      clients[i].outputEnd = 0
      if clients[i].closeWhenFlushed { disconnect(i) }
    }
  }

  /// `flush` for a TLS client: nothing before the handshake is done; SSL_write may take part
  /// of the buffer (partial writes), and a retry may start at a moved buffer.
  func flushTLS(_ i: Int) {
    guard let session = clients[i].tls, !clients[i].handshaking else { return }
    clients[i].writeWantsRead = false
    while clients[i].outputStart < clients[i].outputEnd {
      let base = i * settings.clientOutputBytes
      let length = min(clients[i].outputEnd - clients[i].outputStart, Int(Int32.max))
      let n = sg_tls_write(session, output.baseAddress! + base + clients[i].outputStart, Int32(length))
      if n > 0 {
        clients[i].outputStart += Int(n)
        continue
      }
      switch n {
      case Int32(SG_TLS_WANT_WRITE): return  // POLLOUT: output is pending
      case Int32(SG_TLS_WANT_READ): clients[i].writeWantsRead = true; return
      default: disconnect(i); return
      }
    }
    clients[i].outputStart = 0
    clients[i].outputEnd = 0
    if clients[i].closeWhenFlushed { disconnect(i) }
  }
}

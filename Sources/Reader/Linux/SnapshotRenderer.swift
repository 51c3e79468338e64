import CImageIO
import Glibc
import ScanCore
import ScanPlatform

/// Renders a snapshot as a picture a technician can aim with: the frame, the area outside the
/// region of interest dimmed, the region framed in yellow, every code outlined by its four
/// corners (green when it would be granted, red when not) and labelled with its format and an
/// escaped, shortened payload, under a header band with time, size, fps, exposure and the last
/// decision. Runs on the snapshot thread, never on the loop.
public enum SnapshotRenderer {
  public static let dimPercent = 35
  public static let regionColor: (UInt8, UInt8, UInt8) = (255, 210, 0)
  public static let grantedColor: (UInt8, UInt8, UInt8) = (0, 230, 0)
  public static let deniedColor: (UInt8, UInt8, UInt8) = (255, 40, 40)
  public static let headerHeight = 16

  /// The RGB picture (width × height × 3 bytes).
  public static func render(_ s: SnapshotBuffer) -> [UInt8] {
    let w = s.width, h = s.height
    var rgb = [UInt8](repeating: 0, count: w * h * 3)
    let region = s.effectiveRegion
    rgb.withUnsafeMutableBufferPointer { out in
      for y in 0..<h {
        for x in 0..<w {
          var v = Int(s.luma(x: x, y: y))
          if !region.contains(x: x, y: y) { v = v * dimPercent / 100 }
          let i = (y * w + x) * 3
          out[i] = UInt8(v); out[i + 1] = UInt8(v); out[i + 2] = UInt8(v)
        }
      }
      if region.width < w || region.height < h {
        rectangle(out, w, h, region, color: regionColor, thickness: 2)
      }
      for i in 0..<s.symbolCount {
        let symbol = s[i]
        let color = symbol.verdict.isGranted ? grantedColor : deniedColor
        let c = symbol.corners
        for k in 0..<4 {
          line(out, w, h, Int(c[2 * k]), Int(c[2 * k + 1]), Int(c[(2 * k + 2) % 8]), Int(c[(2 * k + 3) % 8]), color: color, thickness: 3)
        }
        for k in 0..<4 { fill(out, w, h, Int(c[2 * k]) - 3, Int(c[2 * k + 1]) - 3, 7, 7, color: color) }
        // Label above the code's top-left corner (inside the frame).
        var label = "\(i + 1) \(symbol.format.name) "
        let escaped = symbol.withPayload { PayloadEscaping.escaped($0) }
        label += escaped.count > 32 ? String(escaped.prefix(31)) + "~" : escaped
        let minX = [c[0], c[2], c[4], c[6]].map(Int.init).min()!, minY = [c[1], c[3], c[5], c[7]].map(Int.init).min()!
        let textWidth = Int(sg_text_width(label, 1))
        let lx = max(0, min(w - textWidth - 4, minX)), ly = max(headerHeight + 2, minY - 14)
        fill(out, w, h, lx, ly, textWidth + 4, 11, color: (0, 0, 0))
        _ = sg_draw_text(out.baseAddress, Int32(w), Int32(h), Int32(lx + 2), Int32(ly + 2), label, color.0, color.1, color.2, 1)
      }
      // Header band.
      fill(out, w, h, 0, 0, w, headerHeight, color: (0, 0, 0))
      var header = "scangate "
      withUnsafeTemporaryAllocation(byteCount: 256, alignment: 1) { buffer in
        var writer = ByteWriter(buffer)
        s.writeHeader(into: &writer)
        header += String(decoding: writer.written, as: UTF8.self)
      }
      _ = sg_draw_text(out.baseAddress, Int32(w), Int32(h), 4, 4, header, 255, 255, 255, 1)
    }
    return rgb
  }

  /// The picture as PNG bytes.
  public static func png(_ s: SnapshotBuffer) -> [UInt8]? {
    guard s.width > 0 && s.height > 0 else { return nil }
    let rgb = render(s)
    var size = 0
    guard let data = rgb.withUnsafeBufferPointer({ sg_png_encode($0.baseAddress, Int32(s.width), Int32(s.height), 3, &size) }) else {
      return nil
    }
    defer { sg_free(data) }
    return Array(UnsafeBufferPointer(start: data, count: size))
  }

  static func set(_ out: UnsafeMutableBufferPointer<UInt8>, _ w: Int, _ h: Int, _ x: Int, _ y: Int, _ color: (UInt8, UInt8, UInt8)) {
    guard x >= 0, y >= 0, x < w, y < h else { return }
    let i = (y * w + x) * 3
    out[i] = color.0; out[i + 1] = color.1; out[i + 2] = color.2
  }

  static func fill(_ out: UnsafeMutableBufferPointer<UInt8>, _ w: Int, _ h: Int, _ x: Int, _ y: Int, _ width: Int, _ height: Int, color: (UInt8, UInt8, UInt8))
  {
    // Clipped to the picture; a rectangle wholly outside it (corners from a decoder are
    // untrusted) draws nothing rather than forming an invalid range.
    let (yEnd, yOver) = y.addingReportingOverflow(height)
    let (xEnd, xOver) = x.addingReportingOverflow(width)
    let top = max(0, y), bottom = yOver ? h : min(h, yEnd)
    let left = max(0, x), right = xOver ? w : min(w, xEnd)
    guard top < bottom, left < right else { return }
    for yy in top..<bottom {
      for xx in left..<right { set(out, w, h, xx, yy, color) }
    }
  }

  static func line(
    _ out: UnsafeMutableBufferPointer<UInt8>, _ w: Int, _ h: Int, _ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int, color: (UInt8, UInt8, UInt8), thickness: Int
  ) {
    let steps = max(abs(x1 - x0), abs(y1 - y0), 1)
    for t in 0...steps {
      let x = x0 + (x1 - x0) * t / steps, y = y0 + (y1 - y0) * t / steps
      fill(out, w, h, x - thickness / 2, y - thickness / 2, thickness, thickness, color: color)
    }
  }

  static func rectangle(_ out: UnsafeMutableBufferPointer<UInt8>, _ w: Int, _ h: Int, _ r: Region, color: (UInt8, UInt8, UInt8), thickness: Int) {
    fill(out, w, h, r.x - thickness, r.y - thickness, r.width + 2 * thickness, thickness, color: color)
    fill(out, w, h, r.x - thickness, r.y + r.height, r.width + 2 * thickness, thickness, color: color)
    fill(out, w, h, r.x - thickness, r.y, thickness, r.height, color: color)
    fill(out, w, h, r.x + r.width, r.y, thickness, r.height, color: color)
  }
}

/// Renders PNG snapshots on a thread of its own. The loop hands it a captured frame with
/// `render()`, and picks the bytes up when `ready` turns true.
public final class SnapshotWorker: @unchecked Sendable {
  private let buffer: SnapshotBuffer
  private var mutex = pthread_mutex_t()
  private var condition = pthread_cond_t()
  private var requested = false
  private var stopping = false
  private var result: [UInt8]? = nil
  private var done = false
  private var thread = pthread_t()

  public init(buffer: SnapshotBuffer) {
    self.buffer = buffer
    pthread_mutex_init(&mutex, nil)
    pthread_cond_init(&condition, nil)
    thread = startThread { [self] in body() }
  }

  /// Starts rendering the captured frame.
  public func render() {
    pthread_mutex_lock(&mutex)
    requested = true
    done = false
    result = nil
    pthread_cond_signal(&condition)
    pthread_mutex_unlock(&mutex)
  }

  /// The PNG once rendering has finished (nil while it runs, or when it failed: see `finished`).
  public func take() -> (finished: Bool, png: [UInt8]?) {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    guard done else { return (false, nil) }
    done = false
    let png = result
    result = nil
    return (true, png)
  }

  public func stop() {
    pthread_mutex_lock(&mutex)
    stopping = true
    pthread_cond_signal(&condition)
    pthread_mutex_unlock(&mutex)
    pthread_join(thread, nil)
  }

  private func body() {
    while true {
      pthread_mutex_lock(&mutex)
      while !requested && !stopping { pthread_cond_wait(&condition, &mutex) }
      if stopping { pthread_mutex_unlock(&mutex); return }
      requested = false
      pthread_mutex_unlock(&mutex)
      let png = SnapshotRenderer.png(buffer)
      pthread_mutex_lock(&mutex)
      result = png
      done = true
      pthread_mutex_unlock(&mutex)
    }
  }
}

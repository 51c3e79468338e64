import CImageIO
import Glibc
import ScanCore
import ScanPlatform

/// A still image decoded to 8-bit gray (files and tests; never the frame path).
public struct GrayImage: Sendable {
  public var width: Int
  public var height: Int
  public var pixels: [UInt8]
  public init(width: Int, height: Int, pixels: [UInt8]) {
    precondition(pixels.count == width * height)
    self.width = width
    self.height = height
    self.pixels = pixels
  }

  /// Lends the image as a frame.
  public func withFrame<R>(sequence: UInt64 = 0, captured: Instant = Instant(nanoseconds: 0), _ body: (LumaFrame) -> R) -> R {
    pixels.withUnsafeBytes { raw in
      body(
        LumaFrame(
          bytes: raw, geometry: .gray(width: width, height: height),
          captured: captured, sequence: sequence))
    }
  }

  /// Pixels inverted (light-on-dark, as phones in dark mode show codes).
  public func inverted() -> GrayImage {
    GrayImage(width: width, height: height, pixels: pixels.map { 255 &- $0 })
  }

  /// Left-right mirrored.
  public func mirrored() -> GrayImage {
    var out = pixels
    for y in 0..<height {
      for x in 0..<width { out[y * width + x] = pixels[y * width + (width - 1 - x)] }
    }
    return GrayImage(width: width, height: height, pixels: out)
  }

  /// Scaled with bilinear filtering to fit `maxWidth` × `maxHeight` (keeping the aspect ratio),
  /// then padded with the border gray to exactly that size: a camera-sized frame.
  public func fitted(width maxWidth: Int, height maxHeight: Int, pad: UInt8 = 255) -> GrayImage {
    if width == maxWidth && height == maxHeight { return self }
    let scale = min(Double(maxWidth) / Double(width), Double(maxHeight) / Double(height), 1.0)
    let w = max(1, Int(Double(width) * scale)), h = max(1, Int(Double(height) * scale))
    var out = [UInt8](repeating: pad, count: maxWidth * maxHeight)
    let ox = (maxWidth - w) / 2, oy = (maxHeight - h) / 2
    for y in 0..<h {
      let sy = min(Double(height - 1), (Double(y) + 0.5) / scale - 0.5)
      let y0 = max(0, Int(sy)), y1 = min(height - 1, y0 + 1), fy = max(0, sy - Double(y0))
      for x in 0..<w {
        let sx = min(Double(width - 1), (Double(x) + 0.5) / scale - 0.5)
        let x0 = max(0, Int(sx)), x1 = min(width - 1, x0 + 1), fx = max(0, sx - Double(x0))
        let a = Double(pixels[y0 * width + x0]), b = Double(pixels[y0 * width + x1])
        let c = Double(pixels[y1 * width + x0]), d = Double(pixels[y1 * width + x1])
        let v = (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy
        out[(oy + y) * maxWidth + ox + x] = UInt8(max(0, min(255, v.rounded())))
      }
    }
    return GrayImage(width: maxWidth, height: maxHeight, pixels: out)
  }
}

/// Why an image file could not be read.
public struct ImageFileError: Error, Equatable, CustomStringConvertible, Sendable {
  public var path: String
  public var reason: String
  public var description: String { "\(path): \(reason)" }
}

/// Reads image files (JPEG, PNG, PGM/PPM, GIF, BMP) to gray, refusing oversized ones before
/// allocating for their pixels.
public struct ImageFileReader: Sendable {
  /// Largest accepted width × height.
  public var maxPixels: Int
  /// Largest accepted file.
  public var maxFileBytes: Int
  public init(maxPixels: Int = 40_000_000, maxFileBytes: Int = 64 << 20) {
    self.maxPixels = maxPixels
    self.maxFileBytes = maxFileBytes
  }

  public func read(_ path: String) throws(ImageFileError) -> GrayImage {
    let bytes: [UInt8]
    do { bytes = try readWholeFile(path, maxBytes: maxFileBytes) } catch {
      throw ImageFileError(path: path, reason: error.reason)
    }
    return try decode(bytes, path: path)
  }

  /// Decodes an in-memory encoded image.
  public func decode(_ bytes: [UInt8], path: String) throws(ImageFileError) -> GrayImage {
    var kind: Int32 = 0, w: Int32 = 0, h: Int32 = 0
    var message = [CChar](repeating: 0, count: 200)
    let info = bytes.withUnsafeBufferPointer { b in
      sg_image_info(b.baseAddress ?? UnsafePointer(bitPattern: 1)!, b.count, &kind, &w, &h, &message, message.count)
    }
    if info != 0 { throw ImageFileError(path: path, reason: Self.text(message)) }
    guard w > 0, h > 0 else { throw ImageFileError(path: path, reason: "image has no pixels (\(w)×\(h))") }
    guard Int(w) * Int(h) <= maxPixels else {
      throw ImageFileError(path: path, reason: "image is \(w)×\(h), larger than the \(maxPixels)-pixel limit")
    }
    var pixels = [UInt8](repeating: 0, count: Int(w) * Int(h))
    let rc = bytes.withUnsafeBufferPointer { b in
      pixels.withUnsafeMutableBufferPointer { out in
        sg_image_decode_gray(b.baseAddress!, b.count, out.baseAddress!, out.count, w, h, &message, message.count)
      }
    }
    if rc != 0 { throw ImageFileError(path: path, reason: Self.text(message)) }
    return GrayImage(width: Int(w), height: Int(h), pixels: pixels)
  }

  private static func text(_ message: [CChar]) -> String {
    message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
  }
}

/// Writes a gray (1) or RGB (3) image as PNG.
public func writePNG(path: String, pixels: [UInt8], width: Int, height: Int, components: Int) -> Bool {
  pixels.withUnsafeBufferPointer { sg_png_write(path, $0.baseAddress, Int32(width), Int32(height), Int32(components)) == 0 }
}

/// Renders `payload` as a QR code with libqrencode; nil when it does not encode.
public func renderQRCode(_ payload: [UInt8], scale: Int, margin: Int = 4) -> GrayImage? {
  let capacity = 200 * 200 * scale * scale
  var out = [UInt8](repeating: 0, count: capacity)
  let side = payload.withUnsafeBufferPointer { p in
    out.withUnsafeMutableBufferPointer { o in
      sg_qr_render(p.baseAddress ?? UnsafePointer(bitPattern: 1)!, p.count, Int32(scale), Int32(margin), o.baseAddress!, o.count)
    }
  }
  guard side > 0 else { return nil }
  return GrayImage(width: Int(side), height: Int(side), pixels: Array(out[0..<Int(side * side)]))
}

/// Renders `text` as a QR code in its most compact segment modes; the image and its side in modules.
public func renderQRCode(text: String, scale: Int, margin: Int = 4) -> (image: GrayImage, modules: Int)? {
  let capacity = 200 * 200 * scale * scale
  var out = [UInt8](repeating: 0, count: capacity)
  var modules: Int32 = 0
  let side = out.withUnsafeMutableBufferPointer { o in
    sg_qr_render_text(text, Int32(scale), Int32(margin), o.baseAddress!, o.count, &modules)
  }
  guard side > 0 else { return nil }
  return (GrayImage(width: Int(side), height: Int(side), pixels: Array(out[0..<Int(side * side)])), Int(modules))
}

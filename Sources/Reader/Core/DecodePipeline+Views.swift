import ScanBase

// MARK: The strategy's views

extension DecodePipeline where Decoder: ~Copyable {
  /// View pixel coordinates back to the region's: mirror undone, scale undone (pixel centres).
  func mapCorners(_ results: inout DecodeResults, from start: Int, scale: ViewScale, variant: ImageVariant, width w: Int) {
    for i in start..<results.count {
      results.update(i) { symbol in
        symbol.variant = variant
        for k in 0..<4 {
          var x = symbol.corners[2 * k]
          var y = symbol.corners[2 * k + 1]
          if variant.isMirrored { x = Int32(w - 1) - x }
          if scale.up > 1 {
            x /= Int32(scale.up)
            y /= Int32(scale.up)
          } else if scale.down > 1 {
            x = x * Int32(scale.down) + Int32(scale.down - 1) / 2
            y = y * Int32(scale.down) + Int32(scale.down - 1) / 2
          }
          symbol.corners[2 * k] = x
          symbol.corners[2 * k + 1] = y
        }
      }
    }
  }

  /// Writes the region scaled (box average down, linear interpolation up by 2), inverted and/or
  /// mirrored, into the scratch plane.
  func writeScaled(_ frame: LumaFrame, region: Region, scale: ViewScale, variant: ImageVariant, width w: Int, height h: Int) {
    let g = frame.geometry
    let src = frame.bytes
    let row = g.rowStrideBytes, px = g.pixelStrideBytes
    let invert: UInt8 = variant.isInverted ? 0xFF : 0
    let mirror = variant.isMirrored
    let out = scratch.bindMemory(to: UInt8.self)
    if scale.up == 2 {
      let maxX = region.width - 1, maxY = region.height - 1
      for y in 0..<h {
        let sy0 = min(y >> 1, maxY), sy1 = min((y + 1) >> 1, maxY)
        let r0 = (region.y + sy0) * row + region.x * px, r1 = (region.y + sy1) * row + region.x * px
        for x in 0..<w {
          let sx0 = min(x >> 1, maxX), sx1 = min((x + 1) >> 1, maxX)
          let v = Int(src[r0 + sx0 * px]) + Int(src[r0 + sx1 * px]) + Int(src[r1 + sx0 * px]) + Int(src[r1 + sx1 * px])
          out[y * w + (mirror ? w - 1 - x : x)] = UInt8(truncatingIfNeeded: (v + 2) >> 2) ^ invert
        }
      }
      return
    }
    let d = scale.down
    guard let base = src.baseAddress, let dst = out.baseAddress else { return }
    if d == 1 || d == 2 {
      // The common views, without the general box loop (it cost as much as a decode at 640×480).
      for y in 0..<h {
        let r0 = base + (region.y + y * d) * row + region.x * px
        let r1 = r0 + (d == 2 ? row : 0)
        let o = dst + y * w
        if d == 1 {
          if mirror {
            for x in 0..<w { o[w - 1 - x] = r0.load(fromByteOffset: x * px, as: UInt8.self) ^ invert }
          } else if px == 1 {
            for x in 0..<w { o[x] = r0.load(fromByteOffset: x, as: UInt8.self) ^ invert }
          } else {
            for x in 0..<w { o[x] = r0.load(fromByteOffset: x * px, as: UInt8.self) ^ invert }
          }
        } else {
          for x in 0..<w {
            let a = 2 * x * px
            let v =
              Int(r0.load(fromByteOffset: a, as: UInt8.self)) + Int(r0.load(fromByteOffset: a + px, as: UInt8.self))
              + Int(r1.load(fromByteOffset: a, as: UInt8.self)) + Int(r1.load(fromByteOffset: a + px, as: UInt8.self))
            o[mirror ? w - 1 - x : x] = UInt8(truncatingIfNeeded: (v + 2) >> 2) ^ invert
          }
        }
      }
      return
    }
    let area = d * d
    for y in 0..<h {
      let base = (region.y + y * d) * row + region.x * px
      for x in 0..<w {
        var sum = 0
        var a = base + x * d * px
        for _ in 0..<d {
          var b = a
          for _ in 0..<d {
            sum += Int(src[b])
            b += px
          }
          a += row
        }
        out[y * w + (mirror ? w - 1 - x : x)] = UInt8(truncatingIfNeeded: (sum + area / 2) / area) ^ invert
      }
    }
  }
}

/// What a payload is, as ML Kit's scanner types it: a URL, Wi-Fi credentials, text or bytes.
public enum PayloadKind: UInt8, Sendable {
  case url = 0, wifi, text, bytes

  public var name: String {
    switch self {
    case .url: "url"
    case .wifi: "wifi"
    case .text: "text"
    case .bytes: "bytes"
    }
  }

  /// Classifies raw payload bytes without allocating.
  public static func classify(_ bytes: UnsafeRawBufferPointer) -> PayloadKind {
    if hasPrefixIgnoringCase(bytes, "https://") || hasPrefixIgnoringCase(bytes, "http://") {
      return isPrintableASCII(bytes) ? .url : .bytes
    }
    if hasPrefixIgnoringCase(bytes, "WIFI:") { return isValidUTF8Text(bytes) ? .wifi : .bytes }
    return isValidUTF8Text(bytes) ? .text : .bytes
  }
}

/// The fields of a `WIFI:` payload (the ZXing / ML Kit scheme `WIFI:S:<ssid>;T:<auth>;P:<pw>;;`).
public struct WiFiCredentials: Equatable, Sendable {
  public var ssid = ""
  public var security = ""
  public var password = ""
  public var hidden = false

  /// Parses the scheme's fields; backslash escapes `\;`, `\,`, `\:` and `\\`. Nil if not Wi-Fi.
  public init?(_ text: String) {
    guard text.uppercased().hasPrefix("WIFI:") else { return nil }
    var fields: [(String, String)] = []
    var key = "", value = "", inValue = false, escaped = false
    for ch in text.dropFirst(5) {
      if escaped { if inValue { value.append(ch) } else { key.append(ch) }; escaped = false; continue }
      switch ch {
      case "\\": escaped = true
      case ":" where !inValue: inValue = true
      case ";":
        if !key.isEmpty { fields.append((key.uppercased(), value)) }
        key = ""; value = ""; inValue = false
      default: if inValue { value.append(ch) } else { key.append(ch) }
      }
    }
    for (k, v) in fields {
      switch k {
      case "S": ssid = v
      case "T": security = v
      case "P": password = v
      case "H": hidden = v.lowercased() == "true"
      default: break
      }
    }
  }
}

func hasPrefixIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ prefix: StaticString) -> Bool {
  let n = prefix.utf8CodeUnitCount
  guard bytes.count >= n else { return false }
  let p = prefix.utf8Start
  for i in 0..<n {
    var b = bytes[i]
    if b >= 0x41 && b <= 0x5A { b += 32 }
    var q = p[i]
    if q >= 0x41 && q <= 0x5A { q += 32 }
    if b != q { return false }
  }
  return true
}

func isPrintableASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
  for b in bytes where b < 0x21 || b > 0x7E { return false }
  return true
}

/// Valid UTF-8 with no control characters other than tab, CR and LF.
func isValidUTF8Text(_ bytes: UnsafeRawBufferPointer) -> Bool {
  var i = 0
  let n = bytes.count
  while i < n {
    let b = bytes[i]
    if b < 0x80 {
      if (b < 0x20 && b != 0x09 && b != 0x0A && b != 0x0D) || b == 0x7F { return false }
      i += 1
      continue
    }
    let length: Int
    let minimum: UInt32
    var scalar: UInt32
    if b & 0xE0 == 0xC0 {
      length = 2; minimum = 0x80; scalar = UInt32(b & 0x1F)
    } else if b & 0xF0 == 0xE0 {
      length = 3; minimum = 0x800; scalar = UInt32(b & 0x0F)
    } else if b & 0xF8 == 0xF0 {
      length = 4; minimum = 0x10000; scalar = UInt32(b & 0x07)
    } else {
      return false
    }
    guard i + length <= n else { return false }
    for k in 1..<length {
      let c = bytes[i + k]
      guard c & 0xC0 == 0x80 else { return false }
      scalar = scalar << 6 | UInt32(c & 0x3F)
    }
    if scalar < minimum || scalar > 0x10FFFF || (scalar >= 0xD800 && scalar <= 0xDFFF) { return false }
    if scalar >= 0x80 && scalar < 0xA0 { return false }  // C1 controls
    i += length
  }
  return true
}

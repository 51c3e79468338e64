/// How the decoder saw a symbol: which view of the frame it was read in.
public enum ImageVariant: UInt8, Sendable, CaseIterable {
  case upright = 0
  case inverted = 1
  case mirrored = 2
  case invertedMirrored = 3

  public var name: String {
    switch self {
    case .upright: "upright"
    case .inverted: "inverted"
    case .mirrored: "mirrored"
    case .invertedMirrored: "inverted+mirrored"
    }
  }
  public var isInverted: Bool { self == .inverted || self == .invertedMirrored }
  public var isMirrored: Bool { self == .mirrored || self == .invertedMirrored }
}

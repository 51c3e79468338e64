/// The longest label an allow-list entry may carry, and the fixed storage events and snapshots
/// copy it into: declared once here. (`InlineArray` wants its size as a literal, so the storage
/// type spells 48 too; `checkStorage()` ties the two, and the ring and the snapshot call it when
/// they are built.)
public enum LabelLimits {
  public static let bytesMax = 48
  /// Inline label storage, `bytesMax` bytes.
  public typealias Storage = InlineArray<48, UInt8>

  /// Traps at startup if `Storage` and `bytesMax` ever disagree.
  @inline(__always) public static func checkStorage() {
    precondition(Storage.count == bytesMax, "LabelLimits.Storage holds \(Storage.count) bytes, bytesMax is \(bytesMax)")
  }
}

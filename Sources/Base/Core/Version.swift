/// The product version.
public enum ScanGateVersion {
  public static let string = "0.1.0"
}

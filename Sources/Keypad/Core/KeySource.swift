import ScanBase

/// Where a keypad's keys come from: a descriptor the loop polls, read without blocking. The
/// Linux input device (`EvdevKeypad`) is one; tests use others.
public protocol KeySource: AnyObject {
  /// The descriptor to poll for input (readable when keys are waiting).
  var descriptor: Int32 { get }
  /// Hands every key pressed since the last call to `body`, in order, without blocking or
  /// allocating; false when the device is gone (unplugged, an error): the owner closes it.
  func read(_ body: (KeypadKey) -> Void) -> Bool
}

/// Where a keypad's keys go in panel mode: the panel checks PINs, so each key is passed on as it
/// is typed (OSDP: osdp_KEYPAD on the next POLL). False when it could not be (queue full).
public protocol KeypadSink: AnyObject {
  func forward(_ key: KeypadKey) -> Bool
}

import Glibc
import ScanCore
import ScanPlatform

/// Why the allow-list file could not be read, and whether reading again soon may succeed.
public struct AllowListReadFailure: Error, Sendable {
  public var error: AllowListError
  /// The file changed while it was read: retry shortly.
  public var retry: Bool
}

/// Reads the allow-list file, refusing one that changed while it was read (a writer in
/// progress): the caller keeps the live list and retries.
public enum AllowListFile {
  public static func read(_ path: String, maxBytes: Int) -> Result<[UInt8], AllowListReadFailure> {
    func fail(_ reason: String, retry: Bool = false) -> Result<[UInt8], AllowListReadFailure> {
      .failure(AllowListReadFailure(error: AllowListError(line: 0, reason: reason), retry: retry))
    }
    var before = stat()
    do { _ = try syscall("stat", { stat(path, &before) }) } catch { return fail("\(path): \(error.code)") }
    let bytes: [UInt8]
    do { bytes = try readWholeFile(path, maxBytes: maxBytes) } catch { return fail(error.description) }
    var after = stat()
    do { _ = try syscall("stat", { stat(path, &after) }) } catch { return fail("\(path): \(error.code)") }
    if before.st_ino != after.st_ino || before.st_size != after.st_size
      || before.st_mtim.tv_sec != after.st_mtim.tv_sec || before.st_mtim.tv_nsec != after.st_mtim.tv_nsec
      || after.st_size != bytes.count
    {
      return fail("\(path) changed while it was being read; will retry", retry: true)
    }
    return .success(bytes)
  }
}

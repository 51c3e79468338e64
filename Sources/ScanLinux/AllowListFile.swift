import Glibc
import ScanCore

/// Reads the allow-list file for a (re)load, making sure it did not change while being read
/// (a writer that truncates and rewrites in place would otherwise hand us half a file).
public enum AllowListFile {
  public static func read(_ path: String, maxBytes: Int) throws(AllowListError) -> [UInt8] {
    var before = stat()
    do { _ = try syscall("stat", { stat(path, &before) }) } catch {
      throw AllowListError(line: 0, reason: "\(path): \(error.code)")
    }
    let bytes: [UInt8]
    do { bytes = try readWholeFile(path, maxBytes: maxBytes) } catch {
      throw AllowListError(line: 0, reason: error.description)
    }
    var after = stat()
    do { _ = try syscall("stat", { stat(path, &after) }) } catch {
      throw AllowListError(line: 0, reason: "\(path): \(error.code)")
    }
    if before.st_ino != after.st_ino || before.st_size != after.st_size
      || before.st_mtim.tv_sec != after.st_mtim.tv_sec || before.st_mtim.tv_nsec != after.st_mtim.tv_nsec
      || after.st_size != bytes.count
    {
      throw AllowListError(line: 0, reason: "\(path) changed while it was being read; will retry")
    }
    return bytes
  }
}

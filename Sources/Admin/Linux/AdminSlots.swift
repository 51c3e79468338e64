import Glibc

/// A counting semaphore (POSIX `sem_t`): the admin page's console connections at once.
final class AdminSlots: @unchecked Sendable {
  private let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

  init(_ count: Int) { sem_init(semaphore, 0, UInt32(count)) }

  deinit {
    sem_destroy(semaphore)
    semaphore.deallocate()
  }

  /// Takes a slot, waiting up to `seconds` for one; false when none came free.
  func acquire(waitingSeconds seconds: Int) -> Bool {
    var deadline = timespec()
    clock_gettime(CLOCK_REALTIME, &deadline)
    deadline.tv_sec += seconds
    while sem_timedwait(semaphore, &deadline) != 0 {
      guard errno == EINTR else { return false }
    }
    return true
  }

  func release() { sem_post(semaphore) }
}

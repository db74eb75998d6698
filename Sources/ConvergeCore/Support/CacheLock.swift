#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A mutual-exclusion lock for the caches that copies of a document share across
/// threads (the forest cache, the set read cache): a `pthread_mutex_t` at a fixed
/// address, which a class holds so that it never moves.
///
/// The standard library's `Mutex` needs macOS 15 and iOS 18; the package supports
/// earlier systems.
///
/// `@unchecked Sendable`: the mutex is the synchronization itself.
package final class CacheLock: @unchecked Sendable {
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>

  package init() {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` holding the lock.
  @inline(__always)
  package func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }
}

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The latest resolved forest of each parent field of a document, with the causal
/// context it was resolved at: a document's state is a function of the events it holds,
/// so a forest resolved at an equal context is still its forest. Copies of a document
/// share one cache; each finds its own context's forest or resolves it again.
///
/// `@unchecked Sendable`: `entries` is read and written only under `mutex`.
final class ForestCache: @unchecked Sendable {
  private var entries: [String: (context: CausalContext, forest: DocumentForest)] = [:]
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>

  init() {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// The forest of `field` resolved at `context`, if it is the latest one kept.
  func forest(of field: String, at context: CausalContext) -> DocumentForest? {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    guard let entry = entries[field], entry.context == context else { return nil }
    return entry.forest
  }

  /// Keeps `forest` as the forest of its field at `context`.
  func keep(_ forest: DocumentForest, at context: CausalContext) {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    entries[forest.field] = (context, forest)
  }
}

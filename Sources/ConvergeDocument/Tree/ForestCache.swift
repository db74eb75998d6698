/// The latest resolution of each parent field of a document (``ForestResolution``),
/// with the causal context it was resolved at: a document's state is a function of the
/// events it holds, so a forest resolved at an equal context is still its forest, and
/// one resolved at a context the document's includes differs from it only in the
/// entities the newer events touched, which the resolution folds in incrementally.
/// Copies of a document share one cache while neither changes; each finds its own
/// context's forest, brings an older one up to date, or resolves again. A document about
/// to change takes a cache of its own first if it shares one
/// (``Document/ownForestCache()``): two copies edited apart may hold other states at
/// equal contexts (the same replica's dots issued to other edits), which one shared
/// cache would confuse.
///
/// A document allocates its cache when it first holds a parent field (a document
/// without one resolves an empty forest uncached), so documents without trees pay
/// nothing for it.
///
/// `@unchecked Sendable`: `entries` is read and written only under `lock`; a
/// resolution being brought up to date is taken out of `entries` first, so no other
/// thread sees it.
final class ForestCache: @unchecked Sendable {
  private var entries: [String: (context: CausalContext, resolution: ForestResolution)] = [:]
  private let lock = CacheLock()

  /// A cache of its own for a copy about to change, holding what this one holds: their
  /// states may differ from then on at equal contexts (a copy edited apart from the
  /// original issues the same dots to other edits), so they must not share one.
  func copy() -> ForestCache {
    let copy = ForestCache()
    copy.entries = lock.withLock { entries }
    return copy
  }

  /// The forest of `field` in `document`: the kept one if it was resolved at the
  /// document's context, else the kept one brought up to date if the document's context
  /// includes its context, else resolved again; kept either way.
  func forest(of field: String, in document: Document) -> DocumentForest {
    // Taken out, so that an update below holds the only reference to its tables.
    var kept = lock.withLock { () -> (context: CausalContext, resolution: ForestResolution)? in
      let entry = entries.removeValue(forKey: field)
      if let entry, entry.context == document.context { entries[field] = entry }
      return entry
    }
    if let entry = kept, entry.context == document.context { return entry.resolution.forest }
    var resolution = ForestResolution(field: field)
    if let context = kept?.context, document.context.includes(context),
      let touched = document.keysTouched(since: context)
    {
      // Moved out of `kept`, not copied, so that the update changes its tables in place.
      if var entry = kept.take() { swap(&resolution, &entry.resolution) }
      resolution.update(touched: touched, in: document)
    } else {
      kept = nil
      resolution = ForestResolution(field: field, in: document)
    }
    let forest = resolution.forest
    lock.withLock { entries[field] = (document.context, resolution) }
    return forest
  }
}

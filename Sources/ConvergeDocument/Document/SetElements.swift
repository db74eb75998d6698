/// The elements of a set field, every one ever added with its ``Presence``: the store of
/// every add-wins set (``ORSetStore``, whose join, delta and invariant check a set field
/// shares with ``ORSet``), of ``FieldValue`` elements, under the document's single causal
/// context.
///
/// Elements are equal as ``FieldValue``s are, which for strings is canonical
/// equivalence; the wire writes them in ``FieldValue``'s order.
package typealias SetElements = ORSetStore<FieldValue>

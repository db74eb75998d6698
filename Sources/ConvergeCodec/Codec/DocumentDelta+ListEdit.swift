/// The delta of one list edit that places one item (an insert or a move), which session
/// frames carry as records of their own (`FORMAT.md` §8.7, the list item record) instead
/// of embedding its whole message.
extension DocumentDelta {
  /// The parts of a delta that is one replica's insert or move of one list item.
  package struct ListEdit {
    package var key: EntityKey
    package var field: String
    /// One insert run of one slot, and at most one delete of one slot (a move's old one).
    package var runs: RGADelta
    package var value: FieldValue
    package var timestamp: Timestamp

    package init(
      key: EntityKey, field: String, runs: RGADelta, value: FieldValue, timestamp: Timestamp
    ) {
      self.key = key
      self.field = field
      self.runs = runs
      self.value = value
      self.timestamp = timestamp
    }
  }

  /// The delta's parts if it is exactly what ``listEdit(key:field:runs:value:timestamp:)``
  /// builds from them: one entity whose presence only adds the latest dot of the runs,
  /// one list field whose runs are one insert of one scalar (with its content) and at
  /// most one delete of one slot, all by one replica, and one item whose presence adds
  /// the insert's id and whose move names it; and a context holding exactly those dots.
  package var listEdit: ListEdit? {
    var fieldIterator = entities.first?.value.fields.makeIterator()
    guard entities.count == 1, let (key, entity) = entities.first, entity.fields.count == 1,
      let (field, fieldDelta) = fieldIterator?.next(), case .list(let list) = fieldDelta,
      list.items.count == 1, let (value, item) = list.items.first,
      list.slots.inserts.count == 1, let insert = list.slots.inserts.first,
      insert.content.count == 1, list.slots.deletes.count <= 1,
      list.slots.deletes.allSatisfy({ $0.count == 1 && !$0.isDescending }),
      let stamp = item.position.stamp
    else { return nil }
    let edit = ListEdit(
      key: key, field: field, runs: list.slots, value: value, timestamp: stamp.timestamp)
    guard let expected = Self.listEdit(edit), expected == self else { return nil }
    return edit
  }

  /// The delta of `edit`, as a frame's records carry it; `nil` if its runs are not one
  /// replica's.
  package static func listEdit(_ edit: ListEdit) -> DocumentDelta? {
    guard let insert = edit.runs.inserts.first,
      let (replica, counters) = events(of: edit.runs)
    else { return nil }
    var item = MovableListItem()
    item.presence = .add(insert.id)
    item.position.set(insert.id, stamp: .init(timestamp: edit.timestamp, dot: insert.id))
    var delta = DocumentDelta()
    delta.context.insert(replica: replica, counters: counters)
    delta.entities[edit.key] = EntityDelta(
      presence: .add(Dot(replica: replica, counter: counters.maximum)),
      fields: [edit.field: .list(MovableListDelta(slots: edit.runs, items: [edit.value: item]))])
    return delta
  }
}

import Converge

// The typed calls an app makes on its replica (``Replica``'s `create`, `update`, `delete`,
// `get` and `all`), on the one owner that keeps it: each is one ``DeviceReplica/transact(_:)``
// or one read of ``DeviceReplica/replica``, so undo, the store, the pending badge and the
// observers hear of it as of any transaction.

extension DeviceReplica {
  /// Creates an entity from a model value in one transaction and returns its id and the
  /// commit (see ``DocumentTransaction/create(_:id:)``: only the properties that differ
  /// from the model's defaults are written; without an `id`, the entity is named by its
  /// creation event).
  @discardableResult
  public func create<Model: EntityModel>(_ value: Model, id: String? = nil)
    -> (id: String, commit: Commit)
  {
    var created = ""
    let commit = transact { created = $0.create(value, id: id) }
    return (created, commit)
  }

  /// Edits an entity through its model in one transaction; only the fields that changed
  /// are written (see ``DocumentTransaction/update(_:id:_:)``).
  ///
  /// - Complexity: O(f + n) for f schema fields and n scalars of the entity's text
  ///   fields: assigning a text property diffs the whole string. Type through an
  ///   ``EntityText`` instead.
  /// - Throws: ``ReplicaError/entityNotFound(_:)`` if there is no such visible entity;
  ///   then nothing is recorded, saved or published.
  @discardableResult
  public func update<Model: EntityModel>(
    _ type: Model.Type, id: String, _ body: (inout Model) -> Void
  ) throws(ReplicaError) -> Commit {
    // Checked first, so that a missing entity makes no transaction (no undo step, no
    // observers woken); the update reads the model once, in the transaction.
    let key = EntityKey(type: Model.entityType, id: id)
    guard replica.document.contains(key) else { throw .entityNotFound(key) }
    return transact { $0.update(type, id: id, body) }
  }

  /// Deletes an entity of the model's type in one transaction.
  @discardableResult
  public func delete<Model: EntityModel>(_ type: Model.Type, id: String) -> Commit {
    transact { $0.delete(type, id: id) }
  }

  /// The model stored under `id`, or `nil` if there is no such visible entity.
  public func get<Model: EntityModel>(_ type: Model.Type, id: String) -> Model? {
    replica.get(type, id: id)
  }

  /// Every visible entity of the model's type, sorted by id: a projection model (one
  /// that lists only some of the type's fields) reads only those.
  public func all<Model: EntityModel>(_ type: Model.Type) -> [(id: String, value: Model)] {
    replica.all(type)
  }
}

import Converge
import ConvergeTestSupport
import Testing

/// A task that can hang under another: its title, its parent and its subtasks' order.
struct TreeTask: EntityModel, Equatable {
  static let entityType = "task"
  var title = ""
  var parent: EntityKey?
  var subtasks: [EntityKey] = []

  static let schema = EntitySchema<TreeTask>(
    .register("title", \.title),
    .parent("parent", \.parent),
    .list("subtasks", \.subtasks))
}

/// `.parent(…)` fields of typed models: reads give the resolved parent, writes move the
/// node, and a cycle made on two devices reads the same on both.
@Suite struct ModelTreeTests {
  private func key(_ id: String) -> EntityKey { EntityKey(type: TreeTask.entityType, id: id) }

  @Test func aTypedParentReadsTheResolvedForest() throws {
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(2_000))
    let (x, madeX) = phone.create(TreeTask(title: "X"), id: "x")
    let (y, madeY) = phone.create(TreeTask(title: "Y"), id: "y")
    // A root created without a parent writes no parent field.
    #expect(phone.document.fieldKind("parent", of: key(x)) == nil)
    laptop.apply(madeX.delta)
    laptop.apply(madeY.delta)
    let onPhone = try phone.update(TreeTask.self, id: x) { $0.parent = key(y) }
    let onLaptop = try laptop.update(TreeTask.self, id: y) { $0.parent = key(x) }
    phone.apply(try DocumentDelta(decoding: onLaptop.delta.encoded()))
    laptop.apply(try DocumentDelta(decoding: onPhone.delta.encoded()))
    for replica in [phone, laptop] {
      // Y's write would close a cycle: it stays where it was, and reads so.
      #expect(replica.get(TreeTask.self, id: x)?.parent == key(y))
      #expect(replica.get(TreeTask.self, id: y)?.parent == nil)
      #expect(replica.all(TreeTask.self).map(\.value.parent) == [key(y), nil])
      #expect(replica.document.roots(ofType: "task", in: "parent") == [key(y)])
    }
    // A typed write under its own descendant is refused.
    let refused = try phone.update(TreeTask.self, id: y) { $0.parent = key(x) }
    #expect(refused.delta.isEmpty)
    #expect(phone.get(TreeTask.self, id: y)?.parent == nil)
  }

  @Test func aTypedChildCreatedUnderAParent() throws {
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    let (parent, _) = phone.create(TreeTask(title: "Trip"), id: "trip")
    let (child, _) = phone.create(TreeTask(title: "Pack", parent: key(parent)), id: "pack")
    try phone.update(TreeTask.self, id: parent) { $0.subtasks = [key(child)] }
    #expect(phone.get(TreeTask.self, id: child)?.parent == key(parent))
    #expect(
      phone.document.children(of: key(parent), in: "parent", orderedBy: "subtasks") == [key(child)])
    #expect(
      phone.document.parentMove(of: "parent", in: key(child))
        == ParentMove(parent: key(parent), previous: nil))
  }
}

import Converge
import ConvergeTestSupport
import Foundation
import Testing

/// The tree golden files (`FORMAT.md` §8.3.3): they decode to the scenario's values and
/// encode to the same bytes, and the forest they resolve to is the scenario's.
@Suite struct TreeFixtureTests {
  private func load(_ name: String) throws -> [UInt8] {
    let url = try #require(
      Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
      "fixture \(name) missing from the test bundle")
    return Array(try Data(contentsOf: url))
  }

  @Test func treeStateDecodesAndReencodesExactly() throws {
    let bytes = try load("tree-v2.bin")
    let document = try Document(decoding: bytes)
    #expect(document == TreeFixture.document)
    #expect(document.encoded() == bytes)
    #expect(document.fieldKind("parent", of: TreeFixture.x) == .parent)
    let forest = document.forest(of: "parent")
    // X under Y stood, Y under X was refused, and Y then moved to the roots.
    #expect(forest.path(to: TreeFixture.x) == [TreeFixture.y, TreeFixture.x])
    // The project has no parent field and no child left: a root of its type only.
    #expect(forest.roots == [TreeFixture.y])
    #expect(
      document.roots(ofType: "task", in: "parent") == [TreeFixture.project, TreeFixture.y])
  }

  @Test func treeMoveDeltaDecodesAndReencodesExactly() throws {
    let bytes = try load("tree-move-delta-v2.bin")
    let delta = try DocumentDelta(decoding: bytes)
    #expect(delta == TreeFixture.move)
    #expect(delta.encoded() == bytes)
    var document = Document()
    document.apply(delta)
    #expect(
      document.parentMove(of: "parent", in: TreeFixture.y)
        == ParentMove(parent: nil, previous: TreeFixture.project))
  }
}

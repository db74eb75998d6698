import Converge
import ConvergeSimulator
import ConvergeStore
import ConvergeTestSupport
import FrameworkNames
import Testing

/// `import SwiftUI; import Converge` must leave `Text` meaning SwiftUI's: the type
/// annotations below resolve only while no Converge library exports a `Text`,
/// `Transaction`, `TextSelection` or `SHA256` (a second one makes each "ambiguous for type
/// lookup"). `PublicTypeNameTests` checks every other framework type name.
@Suite struct NameCollisionTests {
  @Test func frameworkNamesStayUnambiguousBesideConverge() {
    let label: Text = Text("hi")
    let transaction: Transaction = Transaction()
    let hash: SHA256 = SHA256()
    let selection: TextSelection = TextSelection()
    #expect(label.content == "hi")
    #expect(!transaction.disablesAnimations)
    #expect(hash == SHA256())
    #expect(selection.isInsertion)
    var text = SharedText(replica: ReplicaID(rawValue: 1))
    _ = text.insert("hi", at: 0)
    #expect(text.string == label.content)
  }
}

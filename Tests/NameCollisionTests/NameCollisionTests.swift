import Converge
import ConvergeSimulator
import ConvergeStore
import FrameworkNames
import Testing

/// `import SwiftUI; import Converge` must leave `Text` meaning SwiftUI's: the type
/// annotations below resolve only while no Converge library exports a `Text`,
/// `Transaction` or `SHA256` (a second one makes each "ambiguous for type lookup").
@Suite struct NameCollisionTests {
  @Test func frameworkNamesStayUnambiguousBesideConverge() {
    let label: Text = Text("hi")
    let transaction: Transaction = Transaction()
    let hash: SHA256 = SHA256()
    #expect(label.content == "hi")
    #expect(!transaction.disablesAnimations)
    #expect(hash == SHA256())
    var text = SharedText(replica: ReplicaID(rawValue: 1))
    _ = text.insert("hi", at: 0)
    #expect(text.string == label.content)
  }
}

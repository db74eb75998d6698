import Converge

extension Oracle {
  /// The boards workload's subtask-tree checks (``Workload/treeEdit(_:cards:)``), beside
  /// the convergence checks:
  ///
  /// - one forest everywhere: every replica resolves the parent fields to the forest
  ///   replica 0 resolves, and orders every node's children the same way;
  /// - no cycle: walking up from any node reaches a root within as many steps as there
  ///   are nodes;
  /// - no lost node: every visible card node with a parent field shows in the forest
  ///   exactly once, under its resolved parent (or as a root), and every node shown is
  ///   visible;
  /// - a node's ordered children are exactly its resolved children, once each.
  public static func treeFailures(of replicas: [Replica]) -> [String] {
    var failures: [String] = []
    let field = Workload.parentField
    let reference = replicas.first?.document.forest(of: field)
    for (index, replica) in replicas.enumerated() {
      let document = replica.document
      let forest = document.forest(of: field)
      let name = "replica \(index) (\(replica.id))"
      if let reference, forest != reference {
        failures.append("\(name) resolves another forest than replica 0")
      }
      let nodes = document.keys(ofType: Workload.cardNodeType).filter {
        document.fieldKind(field, of: $0) == .parent
      }
      for node in nodes where forest.path(to: node).count > nodes.count + 1 {
        failures.append("\(name): \(node.id) is in a cycle")
      }
      // Walk down from the roots: each node once, each visible, children as resolved.
      var seen = Set<EntityKey>()
      var stack = forest.roots
      while let node = stack.popLast() {
        guard seen.insert(node).inserted else {
          failures.append("\(name): \(node.id) shows twice in the forest")
          continue
        }
        if !document.contains(node) {
          failures.append("\(name): \(node.id) shows in the forest but is deleted")
        }
        let ordered = document.children(
          of: node, in: field, orderedBy: Workload.subtasksField)
        if Set(ordered) != Set(forest.children(of: node)) || Set(ordered).count != ordered.count {
          failures.append("\(name): \(node.id)'s ordered children are not its children")
        }
        stack += ordered
      }
      let lost = nodes.filter { !seen.contains($0) }
      if !lost.isEmpty {
        failures.append(
          "\(name) lost \(lost.count) tree nodes: "
            + lost.prefix(5).map(\.id).joined(separator: ", "))
      }
    }
    // The order of children, compared once the forests agree.
    if failures.isEmpty, let first = replicas.first {
      for replica in replicas.dropFirst() {
        for node in first.document.keys(ofType: Workload.cardNodeType) {
          let mine = replica.document.children(
            of: node, in: field, orderedBy: Workload.subtasksField)
          let theirs = first.document.children(
            of: node, in: field, orderedBy: Workload.subtasksField)
          if mine != theirs {
            failures.append("replica \(replica.id) orders \(node.id)'s subtasks otherwise")
          }
        }
      }
    }
    return failures
  }
}

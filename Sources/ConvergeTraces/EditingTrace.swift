import Foundation

/// An editing trace in the format of josephg/editing-traces: a sequential trace (one
/// author, patches in order) or a concurrent one (agents whose transactions name the
/// transactions they were typed on).
///
/// Positions and lengths count Unicode scalars.
public enum EditingTrace: Sendable {
  case sequential(SequentialTrace)
  case concurrent(ConcurrentTrace)

  /// The number of patches.
  public var patchCount: Int {
    switch self {
    case .sequential(let trace): trace.patches.count
    case .concurrent(let trace): trace.transactions.reduce(0) { $0 + $1.patches.count }
    }
  }

  /// The content every correct replay ends with.
  public var endContent: String {
    switch self {
    case .sequential(let trace): trace.endContent
    case .concurrent(let trace): trace.endContent
    }
  }
}

/// One patch: delete `deleted` scalars at `position`, then insert `inserted` there.
public struct TracePatch: Sendable, Equatable {
  public var position: Int
  public var deleted: Int
  public var inserted: [Unicode.Scalar]

  public init(position: Int, deleted: Int, inserted: [Unicode.Scalar]) {
    self.position = position
    self.deleted = deleted
    self.inserted = inserted
  }
}

/// A trace with one author whose patches apply in order.
public struct SequentialTrace: Sendable {
  public var startContent: String
  public var endContent: String
  public var patches: [TracePatch]

  public init(startContent: String = "", endContent: String, patches: [TracePatch]) {
    self.startContent = startContent
    self.endContent = endContent
    self.patches = patches
  }
}

/// A trace with several agents. The document before a transaction is the merge of its
/// parents (empty for none); its patches apply in sequence against that document.
public struct ConcurrentTrace: Sendable {
  public struct Transaction: Sendable, Equatable {
    /// Indexes of earlier transactions this one was typed on.
    public var parents: [Int]
    public var agent: Int
    public var patches: [TracePatch]

    public init(parents: [Int], agent: Int, patches: [TracePatch]) {
      self.parents = parents
      self.agent = agent
      self.patches = patches
    }
  }

  public var agentCount: Int
  public var endContent: String
  public var transactions: [Transaction]

  public init(agentCount: Int, endContent: String, transactions: [Transaction]) {
    self.agentCount = agentCount
    self.endContent = endContent
    self.transactions = transactions
  }
}

/// Why a trace could not be read.
public enum TraceError: Error, CustomStringConvertible, Equatable {
  case unreadable(String)
  case malformed(String)

  public var description: String {
    switch self {
    case .unreadable(let message): "cannot read trace: \(message)"
    case .malformed(let message): "malformed trace: \(message)"
    }
  }
}

extension EditingTrace {
  /// Reads a `.json` trace, or a `.json.gz` one through `gzip -dc` (Foundation on Linux
  /// has no gzip reader; the library itself never needs one).
  public static func load(path: String) throws -> EditingTrace {
    try parse(readBytes(path: path))
  }

  /// Parses a trace from its JSON bytes.
  public static func parse(_ data: Data) throws -> EditingTrace {
    let object: Any
    do {
      object = try JSONSerialization.jsonObject(with: data)
    } catch {
      throw TraceError.malformed("not JSON (\(error))")
    }
    guard let root = object as? [String: Any] else {
      throw TraceError.malformed("the top level is not an object")
    }
    guard let endContent = root["endContent"] as? String,
      let transactions = root["txns"] as? [Any]
    else { throw TraceError.malformed("missing endContent or txns") }
    if root["kind"] as? String == "concurrent" {
      guard let agentCount = (root["numAgents"] as? NSNumber)?.intValue, agentCount > 0 else {
        throw TraceError.malformed("a concurrent trace needs numAgents")
      }
      var parsed: [ConcurrentTrace.Transaction] = []
      for (number, transaction) in transactions.enumerated() {
        guard let fields = transaction as? [String: Any],
          let parentList = fields["parents"] as? [Any],
          let agent = (fields["agent"] as? NSNumber)?.intValue, (0..<agentCount).contains(agent)
        else { throw TraceError.malformed("txn \(number) lacks parents or a valid agent") }
        var parents: [Int] = []
        for parent in parentList {
          guard let index = (parent as? NSNumber)?.intValue, (0..<number).contains(index) else {
            throw TraceError.malformed("txn \(number) names a parent that is not earlier")
          }
          parents.append(index)
        }
        parsed.append(
          .init(parents: parents, agent: agent, patches: try patches(of: fields, number: number)))
      }
      return .concurrent(
        ConcurrentTrace(agentCount: agentCount, endContent: endContent, transactions: parsed))
    }
    var patches: [TracePatch] = []
    for (number, transaction) in transactions.enumerated() {
      guard let fields = transaction as? [String: Any] else {
        throw TraceError.malformed("txn \(number) is not an object")
      }
      patches.append(contentsOf: try Self.patches(of: fields, number: number))
    }
    return .sequential(
      SequentialTrace(
        startContent: root["startContent"] as? String ?? "", endContent: endContent,
        patches: patches))
  }

  private static func patches(of transaction: [String: Any], number: Int) throws -> [TracePatch] {
    guard let list = transaction["patches"] as? [Any] else {
      throw TraceError.malformed("txn \(number) has no patches")
    }
    return try list.map { entry in
      guard let patch = entry as? [Any], patch.count == 3,
        let position = (patch[0] as? NSNumber)?.intValue,
        let deleted = (patch[1] as? NSNumber)?.intValue,
        let inserted = patch[2] as? String, position >= 0, deleted >= 0
      else { throw TraceError.malformed("bad patch in txn \(number)") }
      return TracePatch(
        position: position, deleted: deleted, inserted: Array(inserted.unicodeScalars))
    }
  }

  private static func readBytes(path: String) throws -> Data {
    guard FileManager.default.fileExists(atPath: path) else {
      throw TraceError.unreadable("no file at \(path)")
    }
    guard path.hasSuffix(".gz") else {
      guard let data = FileManager.default.contents(atPath: path) else {
        throw TraceError.unreadable("\(path) is not readable")
      }
      return data
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["gzip", "-dc", path]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    do {
      try process.run()
    } catch {
      throw TraceError.unreadable("cannot run gzip (\(error))")
    }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw TraceError.unreadable("gzip -dc failed on \(path)")
    }
    return data
  }
}

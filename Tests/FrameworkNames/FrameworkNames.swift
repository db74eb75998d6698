// Stand-ins for the framework types an app imports beside Converge (SwiftUI's `Text`,
// `Transaction` and `TextSelection`, CryptoKit's `SHA256`), which Linux lacks. `NameCollisionTests` imports
// them next to every Converge library: a public Converge type of the same name would make
// the unqualified uses there ambiguous, and the tests would not compile.

/// SwiftUI's `Text`, reduced to what the test uses.
public struct Text: Equatable {
  public let content: String
  public init(_ content: String) { self.content = content }
}

/// SwiftUI's `Transaction`, reduced to what the test uses.
public struct Transaction: Equatable {
  public var disablesAnimations = false
  public init() {}
}

/// SwiftUI's `TextSelection` (iOS 18, macOS 15), reduced to what the test uses.
public struct TextSelection: Equatable {
  public var isInsertion = true
  public init() {}
}

/// CryptoKit's `SHA256`, reduced to what the test uses.
public struct SHA256: Equatable {
  public init() {}
}

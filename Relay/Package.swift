// swift-tools-version: 6.0
import PackageDescription

// The sync relay: a server (ConvergeRelay), the relay client's NIO socket
// (ConvergeRelayNIO, for the root package's ConvergeRelayClient) and the `converge-relay`
// command. A separate package so the root package keeps no dependencies.
// Build with `swift build --package-path Relay`; `Relay/ci.sh` builds and tests it.
let package = Package(
  name: "ConvergeRelay",
  platforms: [.macOS(.v15), .iOS(.v18)],
  products: [
    .library(name: "ConvergeRelay", targets: ["ConvergeRelay"]),
    .library(name: "ConvergeRelayNIO", targets: ["ConvergeRelayNIO"]),
    .executable(name: "converge-relay", targets: ["RelayCommand"]),
    .executable(name: "relay-example", targets: ["RelayExample"]),
  ],
  dependencies: [
    .package(name: "Converge", path: ".."),
    .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1"),
    .package(
      url: "https://github.com/hummingbird-project/hummingbird-websocket.git", exact: "2.8.1"),
    .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
    .package(url: "https://github.com/vapor/sqlite-nio.git", exact: "1.13.2"),
    .package(url: "https://github.com/vapor/postgres-nio.git", exact: "1.33.2"),
    .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", exact: "2.13.0"),
    .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", exact: "0.2.0"),
  ],
  targets: [
    .target(
      name: "ConvergeRelay",
      dependencies: [
        // The wire envelope and close reasons, shared with the client.
        .product(name: "ConvergeRelayClient", package: "Converge"),
        .product(name: "Converge", package: "Converge"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
        .product(name: "JWTKit", package: "jwt-kit"),
        .product(name: "SQLiteNIO", package: "sqlite-nio"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      ]),
    // Harnesses that run relays (in this process, or as child processes) for the tests,
    // the command's bench and simulator, and the example: not a product, so the public
    // server library ships none of them.
    .target(
      name: "ConvergeRelayTestSupport",
      dependencies: [
        "ConvergeRelay",
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      ]),
    // The relay client's socket over HummingbirdWSClient (SwiftNIO).
    .target(
      name: "ConvergeRelayNIO",
      dependencies: [
        .product(name: "ConvergeRelayClient", package: "Converge"),
        .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
      ]),
    .executableTarget(
      name: "RelayCommand",
      dependencies: [
        "ConvergeRelay", "ConvergeRelayNIO", "ConvergeRelayTestSupport",
        .product(name: "ConvergeRelayClient", package: "Converge"),
        .product(name: "ConvergeStore", package: "Converge"),
        .product(name: "ConvergeSimulator", package: "Converge"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Histogram", package: "hdrhistogram-swift"),
      ]),
    .executableTarget(
      name: "RelayExample",
      dependencies: [
        "ConvergeRelay", "ConvergeRelayNIO", "ConvergeRelayTestSupport",
        .product(name: "ConvergeRelayClient", package: "Converge"),
        .product(name: "ConvergeStore", package: "Converge"),
        .product(name: "Converge", package: "Converge"),
      ]),
    .testTarget(
      name: "RelayTests",
      dependencies: [
        "ConvergeRelay", "ConvergeRelayNIO", "ConvergeRelayTestSupport",
        .product(name: "ConvergeRelayClient", package: "Converge"),
        .product(name: "ConvergeStore", package: "Converge"),
        .product(name: "ConvergeTestSupport", package: "Converge"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
        .product(name: "HummingbirdTesting", package: "hummingbird"),
      ]),
  ],
  swiftLanguageModes: [.v6]
)

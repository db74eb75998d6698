// swift-tools-version: 6.0
import PackageDescription

// The sync relay: a server (ConvergeRelay), its client (ConvergeRelayClient) and the
// `converge-relay` command. A separate package so the root package keeps no dependencies.
// Build with `swift build --package-path Relay`; `Relay/ci.sh` builds and tests it.
let package = Package(
  name: "ConvergeRelay",
  platforms: [.macOS(.v15), .iOS(.v18)],
  products: [
    .library(name: "ConvergeRelay", targets: ["ConvergeRelay"]),
    .library(name: "ConvergeRelayClient", targets: ["ConvergeRelayClient"]),
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
    // The relay's wire envelope and close reasons, shared by server and client.
    .target(
      name: "RelayWire",
      dependencies: [.product(name: "Converge", package: "Converge")]),
    .target(
      name: "ConvergeRelay",
      dependencies: [
        "RelayWire",
        .product(name: "Converge", package: "Converge"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
        .product(name: "JWTKit", package: "jwt-kit"),
        .product(name: "SQLiteNIO", package: "sqlite-nio"),
        .product(name: "PostgresNIO", package: "postgres-nio"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      ]),
    .target(
      name: "ConvergeRelayClient",
      dependencies: [
        "RelayWire",
        .product(name: "Converge", package: "Converge"),
        .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
      ]),
    .executableTarget(
      name: "RelayCommand",
      dependencies: [
        "ConvergeRelay", "ConvergeRelayClient", "RelayWire",
        .product(name: "ConvergeSimulator", package: "Converge"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Histogram", package: "hdrhistogram-swift"),
      ]),
    .executableTarget(
      name: "RelayExample",
      dependencies: [
        "ConvergeRelay", "ConvergeRelayClient", .product(name: "Converge", package: "Converge"),
      ]),
    .testTarget(
      name: "RelayTests",
      dependencies: [
        "ConvergeRelay", "ConvergeRelayClient", "RelayWire",
        .product(name: "ConvergeTestSupport", package: "Converge"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
      ]),
  ],
  swiftLanguageModes: [.v6]
)

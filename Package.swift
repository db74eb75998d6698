// swift-tools-version: 6.0
import PackageDescription

// Converge is licensed under the Apache License 2.0 (see LICENSE). The editing traces in
// Tests/Traces are CC BY 4.0 (see Tests/Traces/LICENSE.md); they are test data only and
// belong to no target.
//
// The root package has no package dependencies: the core embeds in any app without
// pulling anything in. Sibling packages such as Fuzz/ depend on this one by path.
let package = Package(
  name: "Converge",
  platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
  products: [
    .library(name: "Converge", targets: ["Converge"]),
    .library(name: "ConvergeTestSupport", targets: ["ConvergeTestSupport"]),
    .library(name: "ConvergeSimulator", targets: ["ConvergeSimulator"]),
    .library(name: "ConvergeStore", targets: ["ConvergeStore"]),
    .library(name: "ConvergeRelayClient", targets: ["ConvergeRelayClient"]),
    .executable(name: "converge", targets: ["ConvergeCommand"]),
  ],
  targets: [
    // The layers are modules, each depending only on those before it (ARCHITECTURE.md);
    // `Converge` re-exports them, so an app writes `import Converge`.
    // Support, causality, the byte reader and writer, CRC32C, the envelope.
    .target(name: "ConvergeCore"),
    // The LWW register, the add-wins set, the FugueMax sequence and anchors.
    .target(name: "ConvergeCRDTs", dependencies: ["ConvergeCore"]),
    // Entities and fields, transactions, deltas, change events, undo; the list and tree
    // kinds, the replica and typed models.
    .target(name: "ConvergeDocument", dependencies: ["ConvergeCore", "ConvergeCRDTs"]),
    // Every document-level byte format: states, deltas, snapshot keys; the wire format's
    // specification lives beside its code.
    .target(
      name: "ConvergeCodec", dependencies: ["ConvergeCore", "ConvergeCRDTs", "ConvergeDocument"],
      exclude: ["Codec/FORMAT.md"]),
    .target(
      name: "Converge",
      dependencies: ["ConvergeCore", "ConvergeCRDTs", "ConvergeDocument", "ConvergeCodec"]),
    .target(name: "ConvergeTestSupport", dependencies: ["Converge"]),
    // Editing traces (josephg/editing-traces format) and their replay, shared by the
    // command line tool and the tests.
    .target(name: "ConvergeTraces", dependencies: ["Converge"]),
    // Devices, each a replica in a store on its own simulated disk, over a simulated
    // hostile network, checked for convergence.
    .target(
      name: "ConvergeSimulator", dependencies: ["Converge", "ConvergeTestSupport", "ConvergeStore"]),
    // A durable local store: snapshots and an append-only log per document (Foundation and
    // the C library only).
    .target(name: "ConvergeStore", dependencies: ["Converge"]),
    // The relay client's protocol over a small socket protocol, attached to the device's
    // replica, and the relay's wire envelope and close reasons (which the relay in
    // Relay/ imports); Relay/ supplies a NIO socket.
    .target(name: "ConvergeRelayClient", dependencies: ["Converge", "ConvergeStore"]),
    .executableTarget(
      name: "ConvergeCommand",
      dependencies: [
        "Converge", "ConvergeTraces", "ConvergeTestSupport", "ConvergeSimulator", "ConvergeStore",
      ]),
    // Examples: programs shaped like the apps Converge is for, smoke-tested by ExampleTests.
    .target(name: "ExampleModels", dependencies: ["Converge"], path: "Examples/ExampleModels"),
    .executableTarget(
      name: "NotesTwoDevices", dependencies: ["Converge", "ConvergeStore", "ExampleModels"],
      path: "Examples/NotesTwoDevices"),
    .executableTarget(
      name: "TaskBoard", dependencies: ["Converge", "ExampleModels"], path: "Examples/TaskBoard"),
    .executableTarget(
      name: "AppStore", dependencies: ["Converge", "ConvergeStore", "ExampleModels"],
      path: "Examples/AppStore"),
    .executableTarget(
      name: "LiveTyping", dependencies: ["Converge", "ExampleModels"],
      path: "Examples/LiveTyping"),
    .testTarget(
      name: "ConvergeTests",
      dependencies: [
        "Converge", "ConvergeCore", "ConvergeCRDTs", "ConvergeDocument", "ConvergeCodec",
        "ConvergeTestSupport", "ConvergeTraces",
        "ConvergeSimulator",
        "ConvergeStore", "ConvergeRelayClient",
      ],
      // Inputs the fuzzers found failing, replayed as tests (not bundled resources).
      exclude: ["FailCases"],
      // Golden wire-format files that every later version must still decode.
      resources: [.copy("Fixtures")]),
    .testTarget(
      name: "ConvergeStoreTests",
      dependencies: ["Converge", "ConvergeStore", "ConvergeCommand", "ConvergeTestSupport"]),
    .testTarget(
      name: "ExampleTests",
      dependencies: [
        "NotesTwoDevices", "TaskBoard", "AppStore", "LiveTyping", "ConvergeTestSupport",
      ],
      path: "Tests/ExampleTests"),
    // Stand-ins for SwiftUI's and CryptoKit's names, imported beside Converge by a test
    // that compiles only while Converge shadows none of them.
    .target(name: "FrameworkNames", path: "Tests/FrameworkNames"),
    .testTarget(
      name: "NameCollisionTests",
      dependencies: [
        "Converge", "ConvergeSimulator", "ConvergeStore", "ConvergeTestSupport", "FrameworkNames",
      ]),
  ],
  swiftLanguageModes: [.v6]
)

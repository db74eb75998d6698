// swift-tools-version: 6.0
import PackageDescription

// The root package has no package dependencies: the core embeds in any app without
// pulling anything in. Fuzz/ and Benchmarks/ are separate packages that depend on this
// one by path.
let package = Package(
  name: "Converge",
  platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
  products: [
    .library(name: "Converge", targets: ["Converge"]),
    .library(name: "ConvergeTestSupport", targets: ["ConvergeTestSupport"]),
    .library(name: "ConvergeSimulator", targets: ["ConvergeSimulator"]),
    .executable(name: "converge", targets: ["ConvergeCommand"]),
  ],
  targets: [
    // The wire format's specification lives beside the codec's code.
    .target(name: "Converge", exclude: ["Codec/FORMAT.md"]),
    .target(name: "ConvergeTestSupport", dependencies: ["Converge"]),
    // Replicas over a simulated hostile network, checked for convergence.
    .target(name: "ConvergeSimulator", dependencies: ["Converge"]),
    .executableTarget(name: "ConvergeCommand", dependencies: ["Converge", "ConvergeSimulator"]),
    .testTarget(
      name: "ConvergeTests",
      dependencies: ["Converge", "ConvergeTestSupport", "ConvergeSimulator"],
      // Golden wire-format files that every later version must still decode.
      resources: [.copy("Fixtures")]),
  ],
  swiftLanguageModes: [.v6]
)

// swift-tools-version: 6.0
import PackageDescription

// Fuzz targets for Converge, a separate package so the root keeps no dependencies and no
// sanitizer flags. Build with libFuzzer:
//   swift build -c release -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING
// or use ./run.sh TARGET SECONDS. Without -DFUZZING each target replays the files named
// on its command line instead, which is how crashers are reproduced.
let package = Package(
  name: "ConvergeFuzz",
  dependencies: [.package(name: "Converge", path: "..")],
  targets: [
    .target(name: "FuzzSupport"),
    .executableTarget(
      name: "FuzzReplicaScript",
      dependencies: ["FuzzSupport", .product(name: "ConvergeTestSupport", package: "Converge")]),
    .executableTarget(
      name: "FuzzDecode",
      dependencies: ["FuzzSupport", .product(name: "ConvergeTestSupport", package: "Converge")]),
  ],
  swiftLanguageModes: [.v6]
)

// The document layer (ARCHITECTURE.md) stands on the two below it, and its clients see
// them through it, as through the `Converge` umbrella.
@_exported import ConvergeCRDTs
@_exported import ConvergeCore

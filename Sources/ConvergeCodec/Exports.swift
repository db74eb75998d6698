// The codec (ARCHITECTURE.md) stands on the layers below it, and its clients see them
// through it, as through the `Converge` umbrella.
@_exported import ConvergeCRDTs
@_exported import ConvergeCore
@_exported import ConvergeDocument

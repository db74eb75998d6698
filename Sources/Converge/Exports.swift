// `Converge` is the umbrella over the layers' modules (ARCHITECTURE.md): an app writes
// `import Converge` and sees every layer's public API.
@_exported import ConvergeCRDTs
@_exported import ConvergeCodec
@_exported import ConvergeCore
@_exported import ConvergeDocument

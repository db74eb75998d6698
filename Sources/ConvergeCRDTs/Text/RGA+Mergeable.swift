import ConvergeCore

// The sequence's conformances to the core's join protocol.
extension RGA: Mergeable {}
extension SharedText: Mergeable {}

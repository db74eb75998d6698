import ArgumentParser
import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayNIO
import ConvergeRelayTestSupport
import ConvergeStore
import Foundation
import Logging
import Synchronization

/// `converge-relay typing`: what a relay client costs the device's disk. A user types
/// at a steady rate into a note of a `DeviceReplica` on disk, first with nothing
/// attached (without and with the `syncIfDue()` timer an app runs, every 50 ms as the
/// relay client's tick), then with a `RelayClient` attached to a relay on loopback (in this process,
/// SQLite in a temporary folder); each run counts the `fsync`s of the owner's files from
/// opening to closing (the relay's own files are not counted).
struct Typing: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Count a durable owner's fsyncs while typing, alone and with a relay client.")

  @Option(help: "Characters per second.")
  var rate = 10
  @Option(help: "Seconds of typing.")
  var seconds = 10

  func validate() throws {
    guard (1...1000).contains(rate), (1...600).contains(seconds) else {
      throw ValidationError("rate 1…1000, seconds 1…600")
    }
  }

  func run() async throws {
    let folder =
      FileManager.default.temporaryDirectory.path
      + "/converge-relay-typing-\(UInt64.random(in: 0 ... .max))"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let keystrokes = rate * seconds
    let untimed = try await Self.type(
      keystrokes, rate: rate, directory: folder + "/untimed", relayFolder: nil, timer: false)
    let alone = try await Self.type(
      keystrokes, rate: rate, directory: folder + "/alone", relayFolder: nil)
    let attached = try await Self.type(
      keystrokes, rate: rate, directory: folder + "/attached", relayFolder: folder)
    print("\(keystrokes) keystrokes at \(rate)/s, 200 ms group commit")
    print("owner alone, no timer:       \(untimed) fsyncs of its files")
    print("owner alone, 50 ms timer:    \(alone) fsyncs of its files")
    print("owner with a relay client:   \(attached) fsyncs of its files")
  }

  /// Types `keystrokes` characters into an owner on disk in `directory`, attached to a
  /// relay when `relayFolder` is given, and returns the owner's fsyncs.
  @MainActor static func type(
    _ keystrokes: Int, rate: Int, directory: String, relayFolder: String?, timer: Bool = true
  ) async throws -> Int {
    let files = CountingFileSystem()
    var configuration = DocumentStore.Configuration()
    configuration.fileSystem = files
    let owner = try DeviceReplica(directory: directory, configuration: configuration)
    var logger = Logger(label: "converge-relay-typing")
    logger.logLevel = .critical
    var stop: (() async -> Void)?
    var syncing: Task<Void, Never>?
    if let relayFolder {
      let store = try await SQLiteRelayStore.open(path: relayFolder + "/relay.sqlite")
      let authority = try await RelayTokenAuthority(secret: String(repeating: "typing", count: 8))
      let relay = try await LocalRelay.start(store: store, authority: authority, logger: logger)
      let client = RelayClient(
        url: relay.url(space: "typing"),
        token: { id in
          try await authority.sign(
            RelayTokenClaims(
              space: "typing", scope: .write, expiry: Date(timeIntervalSinceNow: 3600),
              replicas: [id]))
        }, logger: logger)
      syncing = Task { await client.run(owner: owner) }
      stop = {
        await relay.stop()
        try? await store.close()
      }
    }
    if syncing == nil, timer {
      // The app's timer the owner asks for (`syncIfDue()`), at the relay client's tick.
      syncing = Task {
        while !Task.isCancelled {
          try? await Task.sleep(for: .milliseconds(50))
          owner.syncIfDue()
        }
      }
    }
    let note = EntityKey(type: "note", id: "typed")
    let start = ContinuousClock.now
    let interval = Duration.seconds(1) / rate
    for index in 0..<keystrokes {
      owner.transact { $0.insertText("x", at: index, in: "body", of: note) }
      try await Task.sleep(until: start + interval * (index + 1))
    }
    if let syncing, relayFolder != nil {
      // Until the relay holds every keystroke (at most ten seconds).
      let deadline = ContinuousClock.now + .seconds(10)
      while owner.pendingCount > 0, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      if owner.pendingCount > 0 { throw ValidationError("the relay did not acknowledge") }
      syncing.cancel()
      await syncing.value
    }
    syncing?.cancel()
    await syncing?.value
    try owner.close()
    await stop?()
    if ProcessInfo.processInfo.environment["CONVERGE_TYPING_BREAKDOWN"] != nil {
      print(files.breakdown.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" })
    }
    return files.syncs
  }
}

/// The real file system, counting the `fsync`s of files and directories.
final class CountingFileSystem: StoreFileSystem {
  private let base = POSIXFileSystem()
  private let count = Atomic(0)
  private let byName = Mutex<[String: Int]>([:])
  var syncs: Int { count.load(ordering: .relaxed) }
  /// The fsyncs by file name (the log's handle as "log", a directory as "directory").
  var breakdown: [String: Int] { byName.withLock { $0 } }

  func note(_ name: String) {
    count.add(1, ordering: .relaxed)
    byName.withLock { $0[name, default: 0] += 1 }
  }

  /// A handle whose syncs count too.
  final class Handle: StoreAppendHandle {
    let inner: any StoreAppendHandle
    let files: CountingFileSystem
    init(_ inner: any StoreAppendHandle, _ files: CountingFileSystem) {
      self.inner = inner
      self.files = files
    }
    func append(_ bytes: [UInt8]) throws { try inner.append(bytes) }
    func sync() throws {
      files.note("log")
      try inner.sync()
    }
    func close() { inner.close() }
  }

  func contents(ofDirectory directory: String) throws -> [String] {
    try base.contents(ofDirectory: directory)
  }
  func createDirectory(_ directory: String) throws { try base.createDirectory(directory) }
  func read(_ path: String) throws -> [UInt8]? { try base.read(path) }
  func append(_ bytes: [UInt8], to path: String) throws { try base.append(bytes, to: path) }
  func openForAppending(_ path: String) throws -> any StoreAppendHandle {
    Handle(try base.openForAppending(path), self)
  }
  func write(_ bytes: [UInt8], to path: String) throws { try base.write(bytes, to: path) }
  func sync(_ path: String) throws {
    note(String(path.split(separator: "/").last ?? ""))
    try base.sync(path)
  }
  func syncDirectory(_ directory: String) throws {
    note("directory")
    try base.syncDirectory(directory)
  }
  func rename(_ source: String, to destination: String) throws {
    try base.rename(source, to: destination)
  }
  func remove(_ path: String) throws { try base.remove(path) }
  func truncate(_ path: String, to length: Int) throws { try base.truncate(path, to: length) }
  func fileIdentity(_ path: String) throws -> UInt64? { try base.fileIdentity(path) }
}

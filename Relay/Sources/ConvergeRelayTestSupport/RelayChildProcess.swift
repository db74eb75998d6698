import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A relay in a child process: `converge-relay serve` on a free loopback port over a data
/// directory, ended with SIGKILL as a crash would end it, and with its parent however the
/// parent ends (it exits when its standard input closes). The relay simulator and the
/// tests that kill relays for real start them this way.
///
/// Sendable so that a task may kill it: the one thing it holds, a `Process`, is only
/// signalled and waited for after it started.
public struct RelayChildProcess: @unchecked Sendable {
  /// The port it listens on, on 127.0.0.1.
  public let port: Int
  private let process: Process

  /// Its process id.
  public var processIdentifier: Int32 { process.processIdentifier }

  /// The first line `serve` prints did not name a port.
  public struct DidNotStart: Error, CustomStringConvertible {
    public var description: String
  }

  /// Starts `executable serve --data data` with `secret`, over the PostgreSQL database
  /// at `postgres` when given (the data directory then holds nothing). `storePoll` is for
  /// relays sharing one SQLite file, which learn of each other's appends only by polling.
  /// `retireAfter` is the relay's horizon in seconds (`serve`'s default when `nil`).
  public static func start(
    executable: URL, data: String, secret: String, postgres: String? = nil,
    storePoll: Duration? = nil, retireAfter: Int? = nil
  ) throws -> RelayChildProcess {
    let process = Process()
    process.executableURL = executable
    process.arguments =
      ["serve", "--data", data, "--port", "0", "--secret", secret, "--exit-when-input-closes"]
      + (postgres.map { ["--postgres", $0] } ?? [])
      + (storePoll.map { ["--store-poll-ms", String(milliseconds($0))] } ?? [])
      + (retireAfter.map { ["--retire-after", String($0)] } ?? [])
    let output = Pipe()
    process.standardOutput = output
    // Kept open by this process alone: when it exits, however it exits, the relay does.
    process.standardInput = Pipe()
    try process.run()
    // The first line names the port; read it byte by byte so nothing else is consumed.
    var line: [UInt8] = []
    let handle = output.fileHandleForReading
    while let byte = handle.readData(ofLength: 1).first, byte != UInt8(ascii: "\n") {
      line.append(byte)
    }
    let text = String(decoding: line, as: UTF8.self)
    guard let portText = text.split(separator: ":").last, let port = Int(portText) else {
      process.terminate()
      throw DidNotStart(description: "a relay did not start: \(text)")
    }
    return RelayChildProcess(port: port, process: process)
  }

  private static func milliseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
  }

  /// The WebSocket address of `space`.
  public func url(space: String) -> String { "ws://127.0.0.1:\(port)/v1/spaces/\(space)/sync" }

  /// SIGKILL: no shutdown, no checkpoint, as a crash.
  public func kill() {
    _ = Foundation.kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }
}

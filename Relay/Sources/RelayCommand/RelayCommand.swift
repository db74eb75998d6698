import ArgumentParser
import Converge
import ConvergeRelay
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

@main
struct ConvergeRelayCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "converge-relay",
    abstract: "A sync relay for Converge replicas.",
    subcommands: [Serve.self, MintToken.self, Bench.self, Simulate.self, Load.self, Typing.self])
}

/// The HS256 secret: the flag, else `CONVERGE_RELAY_SECRET`, else the data directory's
/// `relay.secret`, created with a random value on first use so `serve` needs no setup.
struct SecretOptions: ParsableArguments {
  @Option(help: "The HS256 secret tokens are signed with (or CONVERGE_RELAY_SECRET).")
  var secret: String?

  func resolve(dataDirectory: String?, create: Bool) throws -> String {
    if let secret { return secret }
    if let secret = ProcessInfo.processInfo.environment["CONVERGE_RELAY_SECRET"], !secret.isEmpty {
      return secret
    }
    guard let dataDirectory else {
      throw ValidationError("give --secret, CONVERGE_RELAY_SECRET or --data")
    }
    let path = dataDirectory + "/relay.secret"
    if let saved = try? String(contentsOfFile: path, encoding: .utf8), !saved.isEmpty {
      return saved.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    guard create else { throw ValidationError("no secret in \(path)") }
    var generator = SystemRandomNumberGenerator()
    // 64 hex digits: four 16-digit values (each at least 2^60, so none is shorter).
    let fresh = (0..<4).map { _ in
      String(UInt64.random(in: 1 << 60 ... .max, using: &generator), radix: 16)
    }.joined()
    guard
      FileManager.default.createFile(
        atPath: path, contents: Data(fresh.utf8), attributes: [.posixPermissions: 0o600])
    else { throw ValidationError("cannot write \(path)") }
    return fresh
  }
}

struct Serve: AsyncParsableCommand {
  static let configuration = CommandConfiguration(abstract: "Run the relay.")

  @Option(help: "Directory for the SQLite database and relay.secret (created if missing).")
  var data: String?
  @Option(
    help: ArgumentHelp(
      "A PostgreSQL database (postgres://user:password@host:port/database) instead of SQLite.",
      discussion: "Any number of relays may share it; each serves any space."))
  var postgres: String?
  @Option(help: "Port to listen on (0: any free port).")
  var port = 7780
  @Option(help: "Interface to bind.")
  var host = "127.0.0.1"
  @Option(help: "Largest message a client may send, in bytes.")
  var maxMessageSize = 1 << 20
  @Option(help: "Frames per second a connection may send, counted as they arrive.")
  var rate = 2_000
  @Option(help: "Seconds a socket may stay silent.")
  var idleTimeout = 300
  @Option(
    help: ArgumentHelp(
      "Milliseconds between two reads of the store for other processes' appends (0: never).",
      discussion:
        "Only for several relays sharing one SQLite file; one relay alone, or relays on "
        + "PostgreSQL (which reports appends), need no polling."))
  var storePollMs = 0
  @Option(
    help: ArgumentHelp(
      "Seconds a device may stay silent before the relay retires it from a space.",
      discussion:
        "Until then a device merely offline holds back the stable cut, so what it has not "
        + "seen deleted stays everywhere; a retired device that comes back rejoins under "
        + "a fresh id. The default is 30 days; tests and `simulate` use seconds."))
  var retireAfter = 30 * 24 * 3600
  @OptionGroup var secret: SecretOptions
  @Flag(help: "Exit when standard input closes (a parent that runs relays as children).")
  var exitWhenInputCloses = false

  func validate() throws {
    guard data != nil || postgres != nil else { throw ValidationError("give --data or --postgres") }
  }

  func run() async throws {
    if exitWhenInputCloses {
      // A parent that dies, even by SIGKILL, closes the pipe: its relays go with it.
      Thread.detachNewThread {
        _ = FileHandle.standardInput.readDataToEndOfFile()
        Foundation.exit(0)
      }
    }
    if let data {
      try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
    }
    let store: any RelayStore
    var services: [any Service] = []
    if let postgres {
      let postgresStore = try PostgresRelayStore(url: postgres)
      services = postgresStore.services
      store = postgresStore
    } else if let data {
      store = try await SQLiteRelayStore.open(path: data + "/relay.sqlite")
    } else {
      throw ValidationError("give --data or --postgres")
    }
    let authority = try await RelayTokenAuthority(
      secret: try secret.resolve(dataDirectory: data, create: true))
    var configuration = RelayConfiguration()
    configuration.host = host
    configuration.port = port
    configuration.maxMessageSize = maxMessageSize
    configuration.messagesPerSecond = rate
    configuration.idleTimeout = .seconds(idleTimeout)
    configuration.storePollInterval = .milliseconds(max(0, storePollMs))
    configuration.retireAfter = .seconds(max(0, retireAfter))
    var logger = Logger(label: "converge-relay")
    logger.logLevel = .warning
    let host = self.host
    let app = RelayServer(store: store, authority: authority, configuration: configuration)
      .makeApplication(logger: logger) { port in
        // Tests and scripts read the port from this line.
        FileHandle.standardOutput.write(Data("converge-relay listening on \(host):\(port)\n".utf8))
      }
    // The store's services, then the server: SIGTERM or SIGINT stops the server first
    // (it stops accepting and drains), then the store, then the PostgreSQL client.
    try await ServiceGroup(
      configuration: .init(
        services: services + [app], gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger)
    ).run()
    if let store = store as? SQLiteRelayStore { try await store.close() }
  }
}

struct MintToken: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "token", abstract: "Mint a token for development.")

  @Option(help: "The space the token is for.")
  var space: String
  @Option(help: "read or write.")
  var scope = "write"
  @Option(help: "Seconds until it expires.")
  var expiresIn = 3_600
  @Option(parsing: .upToNextOption, help: "Replica ids (16 hex digits) the device may write.")
  var replica: [String] = []
  @Option(help: "Data directory whose relay.secret to use.")
  var data: String?
  @OptionGroup var secret: SecretOptions

  func run() async throws {
    guard let scope = RelayTokenClaims.Scope(rawValue: scope) else {
      throw ValidationError("scope is read or write")
    }
    let replicas = try replica.map { text in
      guard text.count == 16, let value = UInt64(text, radix: 16) else {
        throw ValidationError("\(text) is not 16 hex digits")
      }
      return ReplicaID(rawValue: value)
    }
    let authority = try await RelayTokenAuthority(
      secret: try secret.resolve(dataDirectory: data, create: false))
    print(
      try await authority.sign(
        RelayTokenClaims(
          space: space, scope: scope, expiry: Date(timeIntervalSinceNow: Double(expiresIn)),
          replicas: replicas)))
  }
}

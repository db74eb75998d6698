#if canImport(Darwin) || canImport(FoundationNetworking)
  import Foundation
  #if canImport(FoundationNetworking)
    import FoundationNetworking
  #endif

  /// Opens relay sockets with Foundation's `URLSessionWebSocketTask`: the relay client's
  /// socket on Apple platforms, with no package dependency.
  ///
  /// This repository's CI runs on Linux: it compiles this type against
  /// FoundationNetworking's `URLSessionWebSocketTask` (the same API), but has never run
  /// it, so try it on an Apple platform before relying on it. On Linux it is unavailable:
  /// FoundationNetworking's WebSocket needs a libcurl built with WebSocket support, which
  /// distributions do not ship; the `Relay` package's `WebSocketRelayConnector` (SwiftNIO)
  /// is the socket there. The relay's close code is read from the task's `closeCode` once
  /// a receive fails.
  #if !canImport(Darwin)
    @available(
      *, unavailable,
      message: "use WebSocketRelayConnector from ConvergeRelayNIO (package Relay) on Linux"
    )
  #endif
  public struct URLSessionRelayConnector: RelaySocketConnector {
    /// The space's sync URL (`wss://host/v1/spaces/SPACE/sync`).
    public let url: URL
    public let session: URLSession
    public let maxMessageSize: Int

    public init(url: URL, session: URLSession = .shared, maxMessageSize: Int = 1 << 20) {
      self.url = url
      self.session = session
      self.maxMessageSize = maxMessageSize
    }

    /// The task, used from the reader and the client's sends; a `URLSessionTask` may be
    /// used from any thread.
    final class TaskBox: @unchecked Sendable {
      let task: URLSessionWebSocketTask
      init(_ task: URLSessionWebSocketTask) { self.task = task }
    }

    struct Socket: RelaySocket {
      let task: TaskBox

      func send(_ bytes: [UInt8]) async throws {
        try await task.task.send(.data(Data(bytes)))
      }

      func close() async {
        task.task.cancel(with: .normalClosure, reason: nil)
      }
    }

    public func connect(token: String) async throws -> (
      socket: any RelaySocket, events: AsyncStream<RelaySocketEvent>
    ) {
      var request = URLRequest(url: url)
      request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
      let task = TaskBox(session.webSocketTask(with: request))
      task.task.maximumMessageSize = maxMessageSize
      task.task.resume()
      let (events, continuation) = AsyncStream.makeStream(of: RelaySocketEvent.self)
      let reader = Task {
        while true {
          do {
            if case .data(let data) = try await task.task.receive() {
              continuation.yield(.message([UInt8](data)))
            }
          } catch {
            let code = task.task.closeCode.rawValue
            continuation.yield(.closed(code: code == 0 ? nil : UInt16(exactly: code)))
            continuation.finish()
            return
          }
        }
      }
      continuation.onTermination = { _ in reader.cancel() }
      return (Socket(task: task), events)
    }
  }
#endif

import Foundation

/// A sequential editing trace parsed into compact patches.
struct Trace {
  /// One patch: delete `deleted` scalars at `position`, then insert
  /// `scalars[insertStart..<insertEnd]` there.
  struct Patch {
    var position: Int
    var deleted: Int
    var insertStart: Int
    var insertEnd: Int
  }

  var patches: [Patch]
  var scalars: [Unicode.Scalar]
  var startContent: String
  var endContent: String
}

enum TraceError: Error, CustomStringConvertible {
  case unreadable(String)
  case malformed(String)

  var description: String {
    switch self {
    case .unreadable(let message): return "cannot read trace: \(message)"
    case .malformed(let message): return "malformed trace: \(message)"
    }
  }
}

/// Reads `.json` traces directly and `.json.gz` ones through `gzip -dc`.
enum TraceLoader {
  static func load(path: String) throws -> Trace {
    let data = try readBytes(path: path)
    let object: Any
    do {
      object = try JSONSerialization.jsonObject(with: data)
    } catch {
      throw TraceError.malformed("not JSON (\(error))")
    }
    guard let root = object as? [String: Any] else {
      throw TraceError.malformed("the top level is not an object")
    }
    guard let endContent = root["endContent"] as? String,
      let transactions = root["txns"] as? [Any]
    else { throw TraceError.malformed("missing endContent or txns") }
    let startContent = root["startContent"] as? String ?? ""
    var patches: [Trace.Patch] = []
    var scalars: [Unicode.Scalar] = []
    for (number, transaction) in transactions.enumerated() {
      guard let fields = transaction as? [String: Any], let list = fields["patches"] as? [Any]
      else { throw TraceError.malformed("txn \(number) has no patches") }
      for entry in list {
        guard let patch = entry as? [Any], patch.count == 3,
          let position = (patch[0] as? NSNumber)?.intValue,
          let deleted = (patch[1] as? NSNumber)?.intValue,
          let inserted = patch[2] as? String, position >= 0, deleted >= 0
        else { throw TraceError.malformed("bad patch in txn \(number)") }
        let start = scalars.count
        scalars.append(contentsOf: inserted.unicodeScalars)
        patches.append(
          Trace.Patch(
            position: position, deleted: deleted, insertStart: start, insertEnd: scalars.count))
      }
    }
    return Trace(
      patches: patches, scalars: scalars, startContent: startContent, endContent: endContent)
  }

  private static func readBytes(path: String) throws -> Data {
    guard FileManager.default.fileExists(atPath: path) else {
      throw TraceError.unreadable("no file at \(path)")
    }
    guard path.hasSuffix(".gz") else {
      guard let data = FileManager.default.contents(atPath: path) else {
        throw TraceError.unreadable("\(path) is not readable")
      }
      return data
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["gzip", "-dc", path]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    do {
      try process.run()
    } catch {
      throw TraceError.unreadable("cannot run gzip (\(error))")
    }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw TraceError.unreadable("gzip -dc failed on \(path)")
    }
    return data
  }
}

enum FileHandleOutput {
  static func error(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
  }
}

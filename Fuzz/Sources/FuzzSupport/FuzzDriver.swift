#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The signature libFuzzer calls for every input.
public typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

#if FUZZING
  @_silgen_name("LLVMFuzzerRunDriver")
  private func llvmFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: FuzzCallback
  ) -> Int32
#endif

/// Starts libFuzzer with `callback` when built with `-DFUZZING` (SwiftPM provides its
/// own `main`, so the fuzzer must be started from it). Otherwise runs `callback` on
/// every file named on the command line, to reproduce a crasher without the fuzzer.
public func runFuzzer(_ callback: FuzzCallback) -> Never {
  #if FUZZING
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(llvmFuzzerRunDriver(&argc, &argv, callback))
  #else
    var failures: Int32 = 0
    for path in CommandLine.arguments.dropFirst() {
      guard let file = fopen(path, "rb") else {
        print("cannot open \(path)")
        failures += 1
        continue
      }
      var bytes: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let read = fread(&buffer, 1, buffer.count, file)
        if read <= 0 { break }
        bytes.append(contentsOf: buffer[0..<read])
      }
      fclose(file)
      _ = bytes.withUnsafeBufferPointer { callback($0.baseAddress, $0.count) }
      print("ok \(path) (\(bytes.count) bytes)")
    }
    exit(failures == 0 ? 0 : 1)
  #endif
}

/// Reports a property violation and aborts, so libFuzzer saves the input as a crasher.
public func fuzzFailure(_ message: String) -> Never {
  // Written to file descriptor 2 directly: the C `stderr` global is not concurrency-safe.
  let line = Array("property violated: \(message)\n".utf8)
  _ = line.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count) }
  abort()
}

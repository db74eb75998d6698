// The `converge` command line tool: `converge replay <trace> [--json] [--iterations N]`.
#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

let usage = """
  usage: converge <command>

  commands:
    replay <trace.json[.gz]> [--json] [--iterations N]
        replay an editing trace (sequential or concurrent) and time it
    fuzz [--seconds N] [--workers N] [--seed S]
        check every merge law and replica-script property on random seeds
  """

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
  print(usage)
  exit(2)
}
arguments.removeFirst()
switch command {
case "replay":
  exit(ReplayCommand.run(arguments))
case "fuzz":
  exit(FuzzCommand.run(arguments))
case "help", "--help", "-h":
  print(usage)
default:
  FileHandleOutput.error("unknown command \(command)\n\(usage)")
  exit(2)
}

// The `converge` command line tool: `converge replay <trace> [--json] [--iterations N]`.
#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

let usage = """
  usage: converge <command>

  commands:
    replay <trace.json[.gz]> [--json] [--iterations N] [--save FILE] [--through-handle]
        replay an editing trace (sequential or concurrent) and time it; --through-handle
        also types a sequential one into a typed model's text, by name and through a handle
    simulate [--replicas N] [--operations N] [--seed S] [--workload notes|tasks|mixed] [--json]
        fork replicas, edit them over a hostile network, check they converge
    inspect <file>
        decode any Converge message or saved state and summarise it (65 on bad input)
    bench <trace.json[.gz]> [--json] [--runs N]
        measure the design's performance table on a sequential trace (use -c release)
    bench --library N [--tasks | --empty-bodies] [--json]
        measure a library of N notes (or tasks) in one replica (use -c release)
    fuzz [--seconds N] [--workers N] [--seed S]
        check every merge law and replica-script property on random seeds
    passages [--cases N] [--seed S]
        count concurrent typing at one spot that merges interleaved (exit 1 if any)
    torture <dir> [--seconds N] [--kills N] [--seed S] [--json]
        kill writers of a durable store at random moments; check nothing acknowledged is lost
    fixtures --write <dir> | --check <dir>
        write (or compare) the codec's golden files, normally Tests/ConvergeTests/Fixtures
  """

// Each command parses its own arguments and returns the exit status.
let commands: [String: ([String]) -> Int32] = [
  "replay": ReplayCommand.run, "simulate": SimulateCommand.run, "inspect": InspectCommand.run,
  "bench": BenchCommand.run, "fuzz": FuzzCommand.run, "passages": PassagesCommand.run,
  "torture": TortureCommand.run, "torture-child": TortureCommand.child,
  "fixtures": FixturesCommand.run,
]

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
  print(usage)
  exit(2)
}
arguments.removeFirst()
if let run = commands[command] {
  exit(run(arguments))
} else if ["help", "--help", "-h"].contains(command) {
  print(usage)
} else {
  FileHandleOutput.error("unknown command \(command)\n\(usage)")
  exit(2)
}

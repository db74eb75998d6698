#!/usr/bin/env bash
# Builds a libFuzzer target and runs it for a number of seconds.
#   Fuzz/run.sh TARGET SECONDS [extra libFuzzer flags]
# Targets: FuzzReplicaScript, FuzzDecode. Crashers land in Fuzz/crashers/TARGET/; copy
# each into Tests/ConvergeTests/FailCases/ (see Fuzz/README.md) with its fix.
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?usage: run.sh TARGET SECONDS}
seconds=${2:?usage: run.sh TARGET SECONDS}
shift 2

# ld.gold crashes on SwiftPM's libFuzzer link (an internal error in dwarf_reader.cc);
# lld, which ships with the toolchain, links it.
swift build -c release --product "$target" \
  -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING \
  -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld

corpus="corpus-work/$target"
crashers="crashers/$target"
mkdir -p "$corpus" "$crashers"
# Seed the working corpus from the committed seeds (golden fixtures for the decoder).
if [ -d "corpus/$target" ]; then cp -n corpus/"$target"/* "$corpus"/ 2>/dev/null || true; fi
dictionary=()
if [ -f "dictionaries/$target.dict" ]; then dictionary=(-dict="dictionaries/$target.dict"); fi

SWIFT_BACKTRACE=enable=no ".build/release/$target" "$corpus" \
  -max_total_time="$seconds" -artifact_prefix="$crashers/" -print_final_stats=1 \
  "${dictionary[@]}" "$@"

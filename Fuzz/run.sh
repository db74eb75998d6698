#!/usr/bin/env bash
# Builds a libFuzzer target and runs it for a number of seconds.
#   Fuzz/run.sh [--checks-asan] TARGET SECONDS [extra libFuzzer flags]
# --checks-asan builds with Converge's internal invariant checks
# (-DCONVERGE_INTERNAL_CHECKS, every mutation checked) and AddressSanitizer, in its own
# build folder: slower, but an invariant broken by hostile input traps where it happens.
# Targets: FuzzReplicaScript, FuzzDecode. Crashers land in Fuzz/crashers/TARGET/; copy
# each into Tests/ConvergeTests/FailCases/ (see Fuzz/README.md) with its fix.
set -euo pipefail
cd "$(dirname "$0")"
usage="usage: run.sh [--checks-asan] TARGET SECONDS [libFuzzer flags]"
scratch=.build
sanitizers=fuzzer
checks=()
if [ "${1:-}" = "--checks-asan" ]; then
  shift
  scratch=.build-checks-asan
  # One -sanitize list: a second -sanitize flag replaces the first, and a build without
  # the fuzzer's coverage instrumentation finds nothing.
  sanitizers=fuzzer,address
  checks=(-Xswiftc -DCONVERGE_INTERNAL_CHECKS)
  # The Swift runtime keeps its metadata caches for the whole process: LeakSanitizer
  # would report them as leaks at exit.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
fi
target=${1:?$usage}
seconds=${2:?$usage}
shift 2

# ld.gold crashes on SwiftPM's libFuzzer link (an internal error in dwarf_reader.cc);
# lld, which ships with the toolchain, links it.
swift build -c release --product "$target" --scratch-path "$scratch" \
  -Xswiftc -sanitize="$sanitizers" -Xswiftc -DFUZZING "${checks[@]}" \
  -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld

corpus="corpus-work/$target"
crashers="crashers/$target"
mkdir -p "$corpus" "$crashers"
# Seed the working corpus from the committed seeds (golden fixtures for the decoder).
if [ -d "corpus/$target" ]; then cp -n corpus/"$target"/* "$corpus"/ 2>/dev/null || true; fi
dictionary=()
if [ -f "dictionaries/$target.dict" ]; then dictionary=(-dict="dictionaries/$target.dict"); fi

SWIFT_BACKTRACE=enable=no "$scratch/release/$target" "$corpus" \
  -max_total_time="$seconds" -artifact_prefix="$crashers/" -print_final_stats=1 \
  "${dictionary[@]}" "$@"

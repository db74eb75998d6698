#!/usr/bin/env bash
# Builds the relay package (debug) in its own scratch path and runs its tests, including
# the ones that spawn the built `converge-relay` executable and kill it with SIGKILL.
# Needs only a Swift toolchain: dependencies resolve from their package URLs and SQLite
# is compiled in (sqlite-nio). Usage: Relay/ci.sh  (RELAY_SCRATCH overrides the path).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scratch="${RELAY_SCRATCH:-$here/.build-ci}"
swift build --package-path "$here" --scratch-path "$scratch" --build-tests
swift test --package-path "$here" --scratch-path "$scratch" --skip-build

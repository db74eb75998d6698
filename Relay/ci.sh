#!/usr/bin/env bash
# Builds the relay package (debug) in its own scratch path and runs its tests, including
# the ones that spawn the built `converge-relay` executable and kill it with SIGKILL, and
# the PostgreSQL ones: the tests run inside Relay/postgres.sh, which installs Debian's
# postgresql if needed and starts a throwaway cluster (so this runs as root, as CI does).
# Dependencies resolve from their package URLs; SQLite is compiled in (sqlite-nio).
# Usage: Relay/ci.sh  (RELAY_SCRATCH overrides the scratch path).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scratch="${RELAY_SCRATCH:-$here/.build-ci}"
swift build --package-path "$here" --scratch-path "$scratch" --build-tests
"$here/postgres.sh" swift test --package-path "$here" --scratch-path "$scratch" --skip-build

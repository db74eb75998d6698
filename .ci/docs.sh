#!/usr/bin/env bash
# Builds the DocC documentation of the Converge module with warnings as errors, so that a
# symbol link to something that does not exist (a renamed method, an internal type) fails
# CI. Only the toolchain's own tools: `swift build`, `swift-symbolgraph-extract` and
# `docc convert`; no package dependency. Reuses the debug build in .build (or
# $DOCS_SCRATCH), so after `swift test` it builds nothing.
#
#   .ci/docs.sh [OUTPUT]   # OUTPUT: where to keep Converge.doccarchive (default: discarded)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="${DOCS_SCRATCH:-$root/.build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
output="${1:-$work/Converge.doccarchive}"

# The toolchain's tools sit beside `swift`; Xcode's are found through xcrun.
tool() {
  local found
  found="$(dirname "$(command -v swift)")/$1"
  if [[ -x "$found" ]]; then echo "$found"; else xcrun --find "$1"; fi
}

swift build --package-path "$root" --scratch-path "$scratch" --target Converge
modules="$(swift build --package-path "$root" --scratch-path "$scratch" --show-bin-path)/Modules"
triple="$(swift -print-target-info | sed -n 's/.*"triple": *"\([^"]*\)".*/\1/p' | head -n 1)"

# Converge is an umbrella that re-exports the layers' modules (ARCHITECTURE.md); their
# public symbols are documented as Converge's, which is how an app sees them.
layers="ConvergeCore,ConvergeCRDTs,ConvergeDocument,ConvergeCodec"

mkdir -p "$work/symbols"
"$(tool swift-symbolgraph-extract)" -module-name Converge -I "$modules" -target "$triple" \
  -minimum-access-level public -experimental-allowed-reexported-modules="$layers" \
  -output-dir "$work/symbols"
"$(tool docc)" convert "$root/Sources/Converge/Converge.docc" \
  --additional-symbol-graph-dir "$work/symbols" --output-dir "$output" \
  --fallback-display-name Converge --fallback-bundle-identifier converge --warnings-as-errors

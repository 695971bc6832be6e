#!/usr/bin/env bash
# A second build with nothing changed compiles nothing of campaign: `build.rs` must declare only
# paths that exist (cargo reruns a build script, and recompiles the crate, for a missing one).
# Run after a build of the same targets (scripts/test.sh runs it after `cargo test`).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(cargo test --no-run --message-format=json 2>/dev/null)
stale=$(printf '%s\n' "$out" | grep '"reason":"compiler-artifact"' | grep '#campaign@' | grep -c '"fresh":false' || true)
if [ "$stale" != 0 ]; then
    echo "check-fresh-build: $stale campaign target(s) recompiled with nothing changed (see build.rs rerun-if-changed)" >&2
    exit 1
fi
echo "check-fresh-build: a second build compiles nothing"

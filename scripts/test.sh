#!/usr/bin/env bash
# The README's test command: install what the tests need on a fresh machine, then run them all.
# Idempotent: installs are skipped when the tools are already present.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f scripts/install-mpi.sh ]; then
  bash scripts/install-mpi.sh
fi
cargo test "$@"

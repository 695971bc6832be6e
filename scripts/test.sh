#!/usr/bin/env bash
# The README's test command: install and start what the tests need on a fresh machine (OpenMPI
# for the `mpi` stack, a private single-node Slurm for the Slurm executor; both need root and
# Debian's packages), then run every test. Idempotent: installs are skipped when present and a
# running Slurm is only checked.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-mpi.sh
eval "$(bash scripts/slurm-up.sh)"
cargo test "$@"

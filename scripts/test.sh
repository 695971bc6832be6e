#!/usr/bin/env bash
# The README's test command: install and start what the tests need on a fresh machine (OpenMPI
# for the `mpi` stack, Linux perf for `cpu` and `counters` profiles, headless Chromium for the HTML report's browser tests, a private
# two-node Slurm on this machine for the Slurm executor; all need root and Debian's packages), then run
# every test, then every benchmark script at its smallest size (benches/smoke.sh). Idempotent:
# installs are skipped when present and a running Slurm is only checked.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-mpi.sh
bash scripts/install-perf.sh
bash scripts/install-chromium.sh
eval "$(bash scripts/slurm-up.sh)"
cargo test "$@"
# With nothing changed, a second build compiles nothing (build.rs declares only existing paths).
if [ $# -eq 0 ]; then bash scripts/check-fresh-build.sh; fi
# Every script in benches/ runs as documented, each at its smallest size against the debug build
# (issue 50, item 4; about 2 minutes on 2 cores).
if [ $# -eq 0 ]; then bash benches/smoke.sh "${CARGO_TARGET_DIR:-target}/debug/campaign"; fi
# The README's install step, checked: `campaign` on PATH from `cargo install --path .` (debug
# profile and this target dir, so it reuses the build above instead of a release build).
root=$(mktemp -d)
cargo install --path . --debug --target-dir "${CARGO_TARGET_DIR:-target}" --root "$root" --locked --offline --quiet
PATH="$root/bin:$PATH" campaign --version
PATH="$root/bin:$PATH" campaign validate plans/*.toml >/dev/null
rm -rf "$root"
echo "test.sh: cargo install --path . puts a working campaign on PATH"

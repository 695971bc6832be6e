#!/usr/bin/env bash
# Benchmark: what `campaign resume` costs on top of the runs it executes, on an N-run journal.
# A complete N-run campaign of a trivial stack; then (a) `resume` of the complete run dir (replay,
# fingerprints of every run, bundles read back, results and report rebuilt, nothing run) against
# `campaign report` of the same dir (the rebuild alone); (b) the journal cut to its first half of
# runs and `resume` finishing the other half, against `run` of a fresh N/2-run campaign.
# Usage: benches/resume_overhead.sh [N] [EXE]   (default 200, target/release/campaign)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
EXE=$(realpath "${2:-target/release/campaign}")
STACK="$PWD/benches/trivial_stack.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
plan() {
  cat <<PLAN
[campaign]
name = "$1"
[case]
platform = "host"
[axes]
variant = ["mesh"]
p = [2]
count = [$(seq -s, 1 "$2")]
stacks = ["trivial"]
[rounds]
warmup = 0
timed = 1
[run]
order = "given"
jobs = 1
repeats = 1
[devices]
kind = "npu"
ids = "0-1"
[stacks.trivial]
command = ["$STACK"]
resource = "none"
PLAN
}
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
cd "$TMP"
plan full "$N" > full.toml
plan half $((N / 2)) > half.toml
"$EXE" run full.toml --results-dir r -q >/dev/null
dir=$(ls -d r/full/run_*)
echo "complete resume: $(ms "$EXE" resume "$dir" -q) ms; report alone: $(ms "$EXE" report "$dir") ms; status: $(ms "$EXE" status "$dir") ms"
# Keep the header and the lines up to the N/2-th finished run.
awk -v keep=$((N / 2)) 'NR == 1 { print; next } { print } /"event":"finished","step":"run:/ { if (++n == keep) exit }' \
  "$dir/journal.jsonl" > j && mv j "$dir/journal.jsonl"
echo "resume of the second half: $(ms "$EXE" resume "$dir" -q) ms; fresh run of $((N / 2)): $(ms "$EXE" run half.toml --results-dir r -q) ms"

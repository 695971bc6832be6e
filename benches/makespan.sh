#!/usr/bin/env bash
# Benchmark 2: a synthetic 72-case campaign (mesh/ring × P 2,4,8 × 6 counts × fp32/int32) on 8
# devices, each run sleeping a time known from its count (benches/sleep_stack.sh). Prints the
# makespan against the lower bound max(sum(P*t)/8, max t).
# Usage: benches/makespan.sh [EXE] [SCALE]
#   EXE    campaign binary (default target/release/campaign)
#   SCALE  factor on every sleep and on the lower bound (default 1: 0.2–1.2 s, the figures in
#          docs/performance.md); benches/smoke.sh runs 0.05, where start-up weighs far more
set -euo pipefail
cd "$(dirname "$0")/.."
EXE=${1:-target/release/campaign}
SCALE=${2:-1}
STACK="$PWD/benches/sleep_stack.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/plan.toml" <<PLAN
[campaign]
name = "makespan"
[case]
platform = "host"
[axes]
variant = ["mesh", "ring"]
p = [2, 4, 8]
count = [256, 4096, 16384, 65536, 262144, 1048576]
dtype = ["fp32", "int32"]
stacks = ["sleepy"]
[rounds]
warmup = 0
timed = 1
[devices]
kind = "npu"
ids = "0-7"
[stacks.sleepy]
command = ["$STACK", "{{ count }}", "$SCALE"]
resource = "npu"
PLAN
t0=$(date +%s.%N)
"$EXE" run "$TMP/plan.toml" --results-dir "$TMP/out" --repeats 1 -q > "$TMP/stdout" || { cat "$TMP/stdout"; exit 1; }
t1=$(date +%s.%N)
python3 - "$t0" "$t1" "$SCALE" <<'PY'
import sys
t0, t1, scale = map(float, sys.argv[1:])
base = {256: .2, 4096: .4, 16384: .6, 65536: .8, 262144: 1.0, 1048576: 1.2}
sleep = {c: t * scale for c, t in base.items()}
work = sum(p * t for p in (2, 4, 8) for t in sleep.values()) * 2 * 2
lb = max(work / 8, max(sleep.values()))
ms = t1 - t0
print(f"cases=72 lower_bound_s={lb:.2f} makespan_s={ms:.2f} ratio={ms/lb:.3f}"
      + (f" scale={scale:g}" if scale != 1 else ""))
PY

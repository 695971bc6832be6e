#!/usr/bin/env bash
# Benchmark 1: engine overhead per run. N runs of a trivial stack through `campaign run`
# (one at a time) against a plain shell loop spawning the same process N times.
# Usage: benches/engine_overhead.sh [N]   (uses target/release/campaign)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
EXE=target/release/campaign
STACK="$PWD/benches/trivial_stack.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
counts=$(seq -s, 1 "$N")
cat > "$TMP/plan.toml" <<PLAN
[campaign]
name = "overhead"
[case]
platform = "host"
[axes]
variant = ["mesh"]
p = [2]
count = [$counts]
stacks = ["trivial"]
[rounds]
warmup = 0
timed = 1
[devices]
kind = "npu"
ids = "0-1"
[stacks.trivial]
command = ["$STACK"]
resource = "none"
PLAN
now() { date +%s.%N; }
# Run dirs on the disk under test (mktemp's filesystem) and, when present, on tmpfs: the
# difference is the filesystem's cost of creating bundle folders and files.
for base in "$TMP" /dev/shm; do
  [ -d "$base" ] || continue
  out="$base/campaign-bench-$$"
  t0=$(now)
  for _ in $(seq "$N"); do "$STACK" > /dev/null; done
  t1=$(now)
  "$EXE" run "$TMP/plan.toml" --results-dir "$out" --jobs 1 -q > /dev/null
  t2=$(now)
  rm -rf "$out"
  python3 - "$N" "$t0" "$t1" "$t2" "$base" <<'PY'
import sys
n, t0, t1, t2 = int(sys.argv[1]), *map(float, sys.argv[2:5])
loop, eng = (t1 - t0) / n, (t2 - t1) / n
print(f"results_on={sys.argv[5]} runs={n} plain_loop_ms_per_run={loop*1e3:.2f} "
      f"engine_ms_per_run={eng*1e3:.2f} overhead_ms_per_run={(eng-loop)*1e3:.2f}")
PY
done

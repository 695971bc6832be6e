#!/usr/bin/env bash
# Benchmark: engine cost per run against N. For each N, in one go: a plain shell loop spawning
# the trivial stack (benches/trivial_stack.sh) N times, then `campaign run --jobs 1` of N runs of
# the same stack. Prints ms/run of both, their ratio (campaign / loop: the figure that holds on
# a noisy shared machine, because both ran in the same minute), the overhead (difference), and
# each N's campaign ms/run relative to the first N's (constant cost in N reads ≈ 1.0).
#
# Usage: benches/engine_scale.sh [EXE] [N...]
#   EXE  campaign binary (default target/release/campaign)
#   N    run counts (default 250 1000 10000 100000)
# Set DIR=/dev/shm/... to measure on tmpfs; the default is a temp dir on the disk.
set -euo pipefail
cd "$(dirname "$0")/.."
EXE=${1:-target/release/campaign}
shift $(($# > 0 ? 1 : 0))
NS=("$@")
[ ${#NS[@]} -gt 0 ] || NS=(250 1000 10000 100000)
STACK="$PWD/benches/trivial_stack.sh"
# shellcheck source=benches/scale_plan.sh
. benches/scale_plan.sh
TMP=$(mktemp -d ${DIR:+-p "$DIR"})
trap 'rm -rf "$TMP"' EXIT
now() { date +%s.%N; }
first=
printf '%8s %10s %12s %7s %12s %10s\n' N loop_ms campaign_ms ratio overhead_ms vs_first_N
for N in "${NS[@]}"; do
  scale_plan "$N" "$STACK" > "$TMP/plan-$N.toml"
  t0=$(now)
  i=0
  while [ $i -lt "$N" ]; do "$STACK" > /dev/null; i=$((i + 1)); done
  t1=$(now)
  "$EXE" run "$TMP/plan-$N.toml" --results-dir "$TMP/out-$N" --jobs 1 --repeats 1 -q > /dev/null
  t2=$(now)
  python3 - "$N" "$t0" "$t1" "$t2" "${first:-}" <<'PY'
import sys
n, t0, t1, t2 = int(sys.argv[1]), *map(float, sys.argv[2:5])
first = float(sys.argv[5]) if sys.argv[5] else None
loop, eng = (t1 - t0) * 1e3 / n, (t2 - t1) * 1e3 / n
rel = eng / first if first else 1.0
print(f"{n:8d} {loop:10.3f} {eng:12.3f} {eng / loop:7.2f} {eng - loop:12.3f} {rel:10.2f}")
PY
  eng=$(python3 -c "print(($t2 - $t1) * 1e3 / $N)")
  [ -n "$first" ] || first=$eng
done

#!/usr/bin/env bash
# Benchmark: CPU time per run against N — the shell loop of benches/engine_scale.sh and
# `campaign run --jobs 1` of N runs of the same trivial stack, each timed by GNU time (user +
# system, children included). CPU time is far less sensitive than wall time to other work on a
# shared machine, so it shows whether the engine's cost per run grows with N when the wall-clock
# figures are too noisy to tell. Prints wall and CPU ms/run of both and the CPU overhead.
#
# Usage: benches/engine_cpu.sh [EXE] [N...]   (defaults: target/release/campaign, 250 10000)
# Set DIR=/dev/shm/... to measure on tmpfs; the default is a temp dir on the disk. Each N's run
# dir is removed before the next N starts.
set -euo pipefail
cd "$(dirname "$0")/.."
EXE=${1:-target/release/campaign}
shift $(($# > 0 ? 1 : 0))
NS=("$@")
[ ${#NS[@]} -gt 0 ] || NS=(250 10000)
command -v /usr/bin/time > /dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
STACK="$PWD/benches/trivial_stack.sh"
# shellcheck source=benches/scale_plan.sh
. benches/scale_plan.sh
TMP=$(mktemp -d ${DIR:+-p "$DIR"})
trap 'rm -rf "$TMP"' EXIT
printf '%8s %9s %13s %9s %13s %16s\n' N loop_wall campaign_wall loop_cpu campaign_cpu cpu_overhead_ms
for N in "${NS[@]}"; do
  scale_plan "$N" "$STACK" > "$TMP/plan-$N.toml"
  loop=$(/usr/bin/time -f '%e %U %S' bash -c \
    "i=0; while [ \$i -lt $N ]; do '$STACK' > /dev/null; i=\$((i + 1)); done" 2>&1)
  eng=$(/usr/bin/time -f '%e %U %S' "$EXE" run "$TMP/plan-$N.toml" --results-dir "$TMP/out-$N" \
    --jobs 1 --repeats 1 -q 2>&1 > /dev/null)
  rm -rf "$TMP/out-$N"
  python3 - "$N" $loop $eng <<'PY'
import sys
n = int(sys.argv[1])
lw, lu, ls, ew, eu, es = map(float, sys.argv[2:8])
ms = lambda s: s * 1e3 / n
print(f"{n:8d} {ms(lw):9.3f} {ms(ew):13.3f} {ms(lu + ls):9.3f} {ms(eu + es):13.3f} "
      f"{ms(eu + es - lu - ls):16.3f}")
PY
done

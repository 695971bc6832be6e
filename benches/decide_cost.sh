#!/usr/bin/env bash
# Benchmark (issue 47, item 7): what deciding costs per run. The same campaign twice — two
# stacks whose times wander ±30 % from repeat to repeat, so no row is ever decided and every
# repeat runs — once with `repeats = 6` and once with `repeats = { min = 3, max = 6 }` (each
# point judged at 3 and 5 repeats, by the report's own analysis). Both run the same N runs
# (`--jobs 1`); the difference of their CPU time (user + system, children included, GNU time)
# over N is what the decisions cost per run.
#
# Usage: benches/decide_cost.sh [EXE] [N]   (defaults: target/release/campaign, 10008)
set -euo pipefail
cd "$(dirname "$0")/.."
EXE=${1:-target/release/campaign}
N=${2:-10008}
command -v /usr/bin/time > /dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
TMP=$(mktemp -d ${DIR:+-p "$DIR"})
trap 'rm -rf "$TMP"' EXIT
points=$((N / 12))
plan() {
  cat <<PLAN
[campaign]
name = "decide"
[axes]
p = [2]
count = [$(seq -s, 1 "$points")]
stacks = ["one", "two"]
[rounds]
warmup = 0
timed = 5
[run]
repeats = $1
[report]
baseline = "one"
PLAN
  for s in one two; do
    cat <<STACK
[stacks.$s]
resource = "none"
command = ["sh", "-c", '''
r=\${CAMPAIGN_BUNDLE_DIR##*~r}; r=\${r%%/*}; case \$r in *[!0-9]*|'') r=1 ;; esac
k=\$(( (r * $( [ $s = one ] && echo 7 || echo 3 )) % 5 ))
for i in 1 2 3 4 5; do echo "CAMPAIGN_SAMPLE {\\"phase\\":\\"timed\\",\\"execute_s\\":0.00\$((k + 2))\$i}"; done
echo 'CAMPAIGN_DONE {"correctness":"pass"}'
''']
STACK
  done
}
plan 6 > "$TMP/fixed.toml"
plan '{ min = 3, max = 6 }' > "$TMP/sequential.toml"
printf '%8s %14s %14s %20s\n' runs fixed_cpu_ms sequential_cpu_ms decide_cost_ms_run
for kind in fixed sequential; do
  /usr/bin/time -f '%U %S' -o "$TMP/$kind.time" "$EXE" run "$TMP/$kind.toml" \
    --results-dir "$TMP/out-$kind" --jobs 1 -q > "$TMP/$kind.out" 2>&1
  grep -o '[0-9]* runs: .*' "$TMP/$kind.out" > "$TMP/$kind.runs" || true
done
python3 - "$TMP" "$points" <<'PY'
import sys
tmp, points = sys.argv[1], int(sys.argv[2])
cpu = {k: sum(map(float, open(f"{tmp}/{k}.time").read().split())) for k in ("fixed", "sequential")}
runs = {k: open(f"{tmp}/{k}.runs").read().strip() for k in ("fixed", "sequential")}
n = points * 12
print(f"{n:8d} {cpu['fixed'] * 1e3 / n:14.3f} {cpu['sequential'] * 1e3 / n:14.3f} "
      f"{(cpu['sequential'] - cpu['fixed']) * 1e3 / n:20.3f}")
print("fixed:", runs["fixed"], "| sequential:", runs["sequential"])
PY

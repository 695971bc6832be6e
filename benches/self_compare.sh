#!/usr/bin/env bash
# Self-comparison: run one plan twice with the same binary, `campaign compare A B` and `B A`,
# N times, and count how often compare claims a change that is not there (a `faster` or
# `slower` row, or exit 1). A benchmark, not a test: the rate depends on the machine's noise.
#
# Usage: benches/self_compare.sh [N] [PLAN] [EXE] [-- extra `campaign run` arguments]
#   N     repetitions (default 20)
#   PLAN  plan (default plans/smoke.toml)
#   EXE   campaign binary (default target/release/campaign)
#   e.g.  benches/self_compare.sh 20 plans/smoke.toml target/release/campaign -- --repeats 5
# Prints one line per repetition (exit codes of A→B and B→A, verdict counts), then totals.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}
PLAN=${2:-plans/smoke.toml}
EXE=${3:-target/release/campaign}
shift $(($# > 3 ? 3 : $#))
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
verdicts() { # stdin: compare --format json; prints "verdict count" lines
  python3 -c 'import json,sys,collections
d=json.load(sys.stdin); c=collections.Counter(r["verdict"] for r in d["rows"])
print(" ".join(f"{k}={v}" for k,v in sorted(c.items())))'
}
total_rows=0; wolf_rows=0; wolf_pairs=0; exit1=0; exit7=0; held_rows=0
for i in $(seq 1 "$N"); do
  dirs=()
  for side in a b; do
    out="$TMP/$i$side"
    "$EXE" run "$PLAN" --results-dir "$out" -q "${EXTRA[@]}" > /dev/null 2>&1 || true
    # shellcheck disable=SC2012 # run dir names are run_<timestamp>
    dirs+=("$(ls -d "$out"/*/run_* | head -1)")
  done
  line="rep $i:"
  pair_wolf=0
  for order in "0 1" "1 0"; do
    # shellcheck disable=SC2086 # split into words on purpose
    set -- $order
    json=$("$EXE" compare "${dirs[$1]}" "${dirs[$2]}" --format json) && rc=0 || rc=$?
    # Exit 1 claims a change; exit 7 says nothing was judged (no claim either way).
    [ "$rc" -eq 1 ] && exit1=$((exit1 + 1))
    [ "$rc" -eq 7 ] && exit7=$((exit7 + 1))
    rows=$(printf '%s' "$json" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["rows"]))')
    wolves=$(printf '%s' "$json" | python3 -c 'import json,sys; print(sum(r["verdict"] in ("faster","slower") for r in json.load(sys.stdin)["rows"]))')
    # Rows whose verdict was withheld because a run was starved of CPU (`contended (…)`).
    held=$(printf '%s' "$json" | python3 -c 'import json,sys; print(sum((r["why"] or "").startswith("contended") for r in json.load(sys.stdin)["rows"]))')
    total_rows=$((total_rows + rows)); wolf_rows=$((wolf_rows + wolves)); held_rows=$((held_rows + held))
    [ "$wolves" -gt 0 ] && pair_wolf=1
    line="$line exit=$rc [$(printf '%s' "$json" | verdicts)]"
  done
  wolf_pairs=$((wolf_pairs + pair_wolf))
  echo "$line"
  rm -rf "$TMP/$i"a "$TMP/$i"b
done
echo "repetitions: $N; compares: $((2 * N)); exit 1: $exit1; exit 7 (nothing judged): $exit7"
echo "rows with a faster/slower verdict: $wolf_rows of $total_rows"
echo "repetitions with any faster/slower row: $wolf_pairs of $N"
echo "rows not judged because a run was starved of CPU (contended): $held_rows of $total_rows"

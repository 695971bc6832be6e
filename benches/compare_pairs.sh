#!/usr/bin/env bash
# Self-comparison over run dirs already made: `campaign compare` of each run dir with the next
# (A→B and B→A), counting rows called faster/slower (false alarms: every run dir is the same
# plan and binary) and compares exiting 1. Lets the verdict rule be measured on many campaigns
# without running them again (`benches/self_compare.sh` runs them as it goes).
#
# Usage: [COMPARE_ARGS="..."] benches/compare_pairs.sh EXE RUN_DIR RUN_DIR [RUN_DIR ...]
#   e.g. for i in $(seq -w 1 21); do campaign run plans/host_vs_mpi.toml --results-dir /tmp/sc/c$i -q; done
#        campaign history ingest --results-dir /tmp/sc/all /tmp/sc/c*/host_vs_mpi/run_*
#        COMPARE_ARGS="--history /tmp/sc/all/history.sqlite" \
#          benches/compare_pairs.sh target/release/campaign /tmp/sc/c*/host_vs_mpi/run_*
#   (COMPARE_ARGS=--no-history judges each pair on its two campaigns alone.)
# Prints one line per pair (exit codes and verdict counts of both directions), then totals.
set -euo pipefail
EXE=$1
shift
dirs=("$@")
[ "${#dirs[@]}" -ge 2 ] || { echo "need at least two run dirs" >&2; exit 2; }
count() { # stdin: compare --format json; prints "rows wolves verdict=count..."
  python3 -c 'import json,sys,collections
d=json.load(sys.stdin); c=collections.Counter(r["verdict"] for r in d["rows"])
w=[f"{r['"'"'case_id'"'"']}/{r['"'"'stack'"'"']}" for r in d["rows"] if r["verdict"] in ("faster","slower")]
print(len(d["rows"]), len(w), " ".join(f"{k}={v}" for k,v in sorted(c.items())), " ".join(w))'
}
pairs=0; rows=0; wolves=0; exit1=0; pairs_with=0
for ((i = 0; i + 1 < ${#dirs[@]}; i++)); do
  a=${dirs[$i]}; b=${dirs[$((i + 1))]}
  line="pair $((i + 1)):"; any=0
  for order in "$a $b" "$b $a"; do
    # shellcheck disable=SC2086 # split into words on purpose
    set -- $order
    # shellcheck disable=SC2086 # COMPARE_ARGS is a list of words
    json=$("$EXE" compare "$1" "$2" --format json ${COMPARE_ARGS:-}) && rc=0 || rc=$?
    [ "$rc" -eq 1 ] && exit1=$((exit1 + 1))
    read -r n w rest <<< "$(printf '%s' "$json" | count)"
    rows=$((rows + n)); wolves=$((wolves + w)); [ "$w" -gt 0 ] && any=1
    line="$line exit=$rc [$rest]"
  done
  pairs=$((pairs + 1)); pairs_with=$((pairs_with + any))
  echo "$line"
done
echo "pairs: $pairs; compares: $((2 * pairs)); exit 1: $exit1"
echo "rows with a faster/slower verdict: $wolves of $rows"
echo "pairs with any faster/slower row: $pairs_with of $pairs"

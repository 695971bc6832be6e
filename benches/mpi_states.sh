#!/usr/bin/env bash
# The `mpi` stack's helper (examples/mpi/allreduce_bench.c) and the `host` stack
# (`campaign bench collective`) against a bare MPI loop (benches/mpi_bare_collectives.c), per
# launch state (issue 50, items 3 and 5). P = 2, fp32. Shapes (op:count, count = the op's whole
# buffer per rank): allreduce 1 Mi and 16 Mi (helper, bare), alltoall 16 Mi (host, helper,
# bare). Every repetition launches every (shape, program) once, in an order shuffled afresh per
# repetition (seeded: SEED), so a busy moment or the predecessor's freed memory hits every
# program alike; LAUNCHES repetitions.
#
# Launch states. At 1 Mi on this machine a launch of either program lands in one of two levels
# (~1 ms or ~3 ms a round, docs/performance.md "Stop 38"), and the median over a few launches is
# decided by how many happened to be slow. A shape's launches are split into states by the
# launch medians of *all* its programs pooled (no program can move the cut on its own): at the
# largest gap between consecutive sorted values (in log), if that gap is at least GAP× (default
# 1.3, above the 1.1× target and above the spread inside one state) and leaves at least 3
# launches on each side; otherwise the shape has one state. Then, per state and program: n
# launches, median of launch medians and its ratio to the bare loop's in the same state; the
# pairs (same repetition) in which program and bare loop landed in the same state, and the
# median of their paired ratios; and the overall figures (all launches). A state in which one
# program lands and the other never does would be the program, not the machine: the n columns
# show that.
# Each rank runs under a wrapper recording its CPU affinity (OpenMPI binds P = 2 ranks to cores
# 0 and 1: the ranks never share a core) and its involuntary/voluntary context switches
# (/usr/bin/time %c %w), printed per state: preemption shows there, not in the timing split.
#
# Usage: benches/mpi_states.sh [LAUNCHES]      (default 20: under 10 minutes quiet here)
#        BUSY=1 ...                    one `yes > /dev/null` beside the run (one core busy);
#                                      its CPU before/after each launch is recorded
#        SHAPES="allreduce:1048576,alltoall:16777216" ...   the (op:count) shapes
#        HOST_VARIANTS="direct pairwise" ...   host stack variants (alltoall shapes only;
#                                      HOST_OPS="alltoall allreduce" to add host elsewhere)
#        CAMPAIGN=target/release/campaign ...  the campaign binary for the host stack
#        TIMED=100 TIMED_BIG=20 WARMUP=20 WARMUP_BIG=5   rounds below / at 16 Mi elements
#        GAP=1.3 SEED=50 ...           the state split's gap and the order's seed
#        RAW=file.tsv ...              keep every launch's record (one line each, written as
#                                      it goes: a cut run keeps what it measured)
#        benches/mpi_states.sh --analyze file.tsv   the per-state tables of a RAW file again
#        MUNGE=1 ...                   keep PMIx's munge authentication: by default the script
#                                      sets PMIX_MCA_psec=^munge, which only removes mpirun's
#                                      ~2 s of retries against the absent munge daemon at
#                                      startup (nothing inside the timed rounds; 0.45 s a launch
#                                      instead of 2.4 s, so 5x more launches fit)
set -euo pipefail
cd "$(dirname "$0")/.."
ANALYZE=""
if [ "${1:-}" = --analyze ]; then ANALYZE=$2; fi
LAUNCHES=${1:-20}
TIMED=${TIMED:-100}
TIMED_BIG=${TIMED_BIG:-20}
WARMUP=${WARMUP:-20}
WARMUP_BIG=${WARMUP_BIG:-5}
GAP=${GAP:-1.3}
SEED=${SEED:-50}
CAMPAIGN=${CAMPAIGN:-target/release/campaign}
HOST_VARIANTS=${HOST_VARIANTS:-direct pairwise}
HOST_OPS=${HOST_OPS:-alltoall}
IFS=, read -r -a SHAPE_LIST <<< "${SHAPES:-allreduce:1048576,allreduce:16777216,alltoall:16777216}"
TMP=$(mktemp -d)
RAWFILE=${RAW:-$TMP/raw.tsv}
HOG=""
cleanup() {
  if [ -n "$HOG" ]; then kill "$HOG" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
measure() {
mpicc -O2 -Wall -Wextra -o "$TMP/helper" examples/mpi/allreduce_bench.c
mpicc -O2 -Wall -Wextra -o "$TMP/bare" benches/mpi_bare_collectives.c
if [ "${MUNGE:-0}" != 1 ]; then export PMIX_MCA_psec=^munge; fi
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2)
# The per-rank wrapper: affinity, then the program under /usr/bin/time (context switches).
cat > "$TMP/wrap" <<'SH'
#!/bin/sh
aff=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$$/status)
exec /usr/bin/time -f "$aff %c %w" -o "$WRAP_DIR/rank.${OMPI_COMM_WORLD_RANK:-0}" "$@"
SH
chmod +x "$TMP/wrap"
export WRAP_DIR="$TMP/w"
mkdir -p "$WRAP_DIR"

if [ "${BUSY:-0}" = 1 ]; then
  yes > /dev/null &
  HOG=$!
fi
hog_where() { # the hog's CPU (/proc/PID/stat field 39) and its migrations so far
  if [ -n "$HOG" ]; then
    printf '%s/%s' "$(awk '{print $39}' "/proc/$HOG/stat")" \
      "$(awk '/se.nr_migrations/ {print $3}' "/proc/$HOG/sched")"
  else
    printf -- -
  fi
}
samples() { # median and min of the timed rounds' execute_s (native protocol)
  python3 -c 'import json,sys,statistics
xs=[json.loads(l.split(" ",1)[1])["execute_s"] for l in sys.stdin if l.startswith("CAMPAIGN_SAMPLE") and "\"timed\"" in l]
print(statistics.median(xs), min(xs)) if xs else print("nan nan")'
}

# Jobs: "op count program"; program = helper, bare or host-<variant>.
JOBS=()
for shape in "${SHAPE_LIST[@]}"; do
  op=${shape%%:*} count=${shape##*:}
  case " $HOST_OPS " in
    *" $op "*) for v in $HOST_VARIANTS; do JOBS+=("$op $count host-$v"); done ;;
  esac
  JOBS+=("$op $count helper" "$op $count bare")
done

run_job() {
  local op=$1 count=$2 prog=$3 warmup=$WARMUP timed=$TIMED out where0 t0 t1
  if [ "$count" -ge 16777216 ]; then warmup=$WARMUP_BIG timed=$TIMED_BIG; fi
  rm -f "$WRAP_DIR"/rank.*
  where0=$(hog_where)
  t0=$(date +%s.%N)
  case $prog in
    helper)
      out=$("${MPIRUN[@]}" "$TMP/wrap" "$TMP/helper" --op "$op" --count "$count" --dtype fp32 \
        --warmup "$warmup" --timed "$timed" | samples) ;;
    bare)
      out=$("${MPIRUN[@]}" "$TMP/wrap" "$TMP/bare" "$op" "$count" "$warmup" "$timed" \
        | sed -n 's/.*median_s=\([^ ]*\) min_s=\([^ ]*\).*/\1 \2/p') ;;
    host-*)
      printf '{"op":"%s","variant":"%s","p":2,"count":%s,"platform":"host","warmup_rounds":%s,"timed_rounds":%s}\n' \
        "$op" "${prog#host-}" "$count" "$warmup" "$timed" > "$TMP/case.json"
      out=$("$TMP/wrap" "$CAMPAIGN" bench collective --case-file "$TMP/case.json" | samples) ;;
  esac
  t1=$(date +%s.%N)
  # rank files: "affinity ivcs vcs", one per rank
  local ranks
  ranks=$(for f in "$WRAP_DIR"/rank.*; do tr ' ' ':' < "$f" | tr -d '\n'; printf ' '; done)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t%s\t%s\n' "$rep" "$pos" "$op" "$count" "$prog" \
    "${out// /$'\t'}" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$where0" \
    "$(hog_where)" "${ranks% }" >> "$RAWFILE"
}

echo "mpi_states: LAUNCHES=$LAUNCHES busy=${BUSY:-0} seed=$SEED gap=$GAP timed=$TIMED/$TIMED_BIG" \
  "warmup=$WARMUP/$WARMUP_BIG psec=${PMIX_MCA_psec:-default} started $(date -u +%FT%TZ)"
"${MPIRUN[@]}" --report-bindings "$TMP/bare" allreduce 256 1 1 2>&1 | sed -n 's/.*\(MCW rank.*\)/  binding: \1/p'
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'rep\tpos\top\tcount\tprogram\tmedian_s\tmin_s\twall_s\thog_before\thog_after\tranks(aff:ivcs:vcs)\n' > "$RAWFILE"
for rep in $(seq 1 "$LAUNCHES"); do
  mapfile -t order < <(python3 -c 'import random,sys
jobs=sys.argv[3:]; random.Random(int(sys.argv[1])*1000+int(sys.argv[2])).shuffle(jobs); print("\n".join(jobs))' \
    "$SEED" "$rep" "${JOBS[@]}")
  pos=0
  for job in "${order[@]}"; do
    pos=$((pos + 1))
    # shellcheck disable=SC2086 # job is "op count program"
    run_job $job
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)  finished $(date -u +%FT%TZ)"
}
if [ -n "$ANALYZE" ]; then RAWFILE=$ANALYZE; else measure; fi

python3 - "$RAWFILE" "$GAP" <<'PY'
import csv, math, statistics, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
gap_min = float(sys.argv[2])
shapes = defaultdict(list)
for r in rows:
    r["m"] = float(r["median_s"])
    r["rep"] = int(r["rep"])
    rk = [x.split(":") for x in r["ranks(aff:ivcs:vcs)"].split()]
    r["aff"] = "|".join(x[0] for x in rk)
    r["ivcs"] = sum(int(x[1]) for x in rk)
    shapes[(r["op"], int(r["count"]))].append(r)

def fmt(s):
    return f"{s * 1e3:.3f} ms"

for (op, count), rs in sorted(shapes.items()):
    xs = sorted(r["m"] for r in rs if r["m"] == r["m"])
    cut, best = None, 0.0
    for i in range(3, len(xs) - 2):  # at least 3 launches on each side
        g = math.log(xs[i] / xs[i - 1])
        if g > best:
            best, cut = g, math.sqrt(xs[i] * xs[i - 1])
    if cut is None or math.exp(best) < gap_min:
        cut = None
    state_of = (lambda r: "one") if cut is None else (lambda r: "fast" if r["m"] < cut else "slow")
    states = ["one"] if cut is None else ["fast", "slow"]
    progs = sorted({r["program"] for r in rs}, key=lambda p: (p == "bare", p))
    by = defaultdict(dict)  # program -> rep -> row
    for r in rs:
        by[r["program"]][r["rep"]] = r
    print(f"\n{op} {count} (P=2 fp32): "
          + ("one state (largest gap between launch medians %.2fx < %sx)" % (math.exp(best), gap_min)
             if cut is None else f"states split at {fmt(cut)} (gap {math.exp(best):.2f}x)")
          + f"; affinities seen: {sorted({r['aff'] for r in rs})}")
    print(f"  {'program':<14} {'state':<5} {'n':>3} {'median':>11} {'x bare':>7} {'pairs':>5} "
          f"{'paired x':>8} {'ivcs/launch':>11}")
    bare = by.get("bare", {})
    for st in states + ["all"]:
        keep = (lambda r: True) if st == "all" else (lambda r, st=st: state_of(r) == st)
        bm = [r["m"] for r in bare.values() if keep(r)]
        bmed = statistics.median(bm) if bm else None
        for p in progs:
            pr = [r for r in by[p].values() if keep(r)]
            if not pr:
                print(f"  {p:<14} {st:<5} {0:>3}")
                continue
            med = statistics.median(r["m"] for r in pr)
            ratio = f"{med / bmed:.2f}" if bmed and p != "bare" else "-"
            pairs = [r["m"] / bare[r["rep"]]["m"] for r in pr
                     if p != "bare" and r["rep"] in bare and keep(bare[r["rep"]])]
            paired = f"{statistics.median(pairs):.2f}" if pairs else "-"
            iv = statistics.median(r["ivcs"] for r in pr)
            print(f"  {p:<14} {st:<5} {len(pr):>3} {fmt(med):>11} {ratio:>7} {len(pairs):>5} "
                  f"{paired:>8} {iv:>11.0f}")
    seq = {p: " ".join(f"{by[p][k]['m'] * 1e3:.3g}" for k in sorted(by[p])) for p in progs}
    for p in progs:
        print(f"    {p} launches (ms, in order): {seq[p]}")
PY

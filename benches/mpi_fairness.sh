#!/usr/bin/env bash
# Fairness of the `mpi` stack's helper (examples/mpi/allreduce_bench.c) against a bare
# MPI_Allreduce loop (benches/mpi_bare_collectives.c, op allreduce): the same shapes, the same mpirun line as
# stacks/mpi.toml, alternating helper and bare loop REPS times so a busy moment of the shared
# machine hits both. Prints, per (P, count), the median over repetitions of each program's
# median round time (slowest rank) and the ratio helper / bare (target ≤ 1.1).
#
# Usage: benches/mpi_fairness.sh [REPS] [TIMED]   (defaults 7 and 200; counts of 16 Mi elements
#        and more run max(TIMED/10, 20) timed rounds)
#        HELPER_SRC=old.c benches/mpi_fairness.sh   measures another version of the helper
#        HELPER_ARGS="--check every" ...             extra helper arguments
#        OLD_SRC=old.c ...                           also runs old.c (with OLD_ARGS) in every
#                                                    repetition: a before/after column
#        SHAPES="2 256,2 1048576" ...                the (P count) shapes, comma-separated
#        VERBOSE=1 ...                               also print each repetition's median
#        BUSY=1 ...                                  both cores busy: two `yes > /dev/null`
#                                                    run alongside (killed on exit)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-7}
TIMED=${2:-200}
WARMUP=20
TMP=$(mktemp -d)
HOGS=()
cleanup() {
  for pid in "${HOGS[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
mpicc -O2 -Wall -Wextra -o "$TMP/helper" "${HELPER_SRC:-examples/mpi/allreduce_bench.c}"
mpicc -O2 -Wall -Wextra -o "$TMP/bare" benches/mpi_bare_collectives.c
if [ -n "${OLD_SRC:-}" ]; then mpicc -O2 -Wall -Wextra -o "$TMP/old" "$OLD_SRC"; fi
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
sample_median() {
  python3 -c 'import json,sys,statistics
xs=[json.loads(l.split(" ",1)[1])["execute_s"] for l in sys.stdin if l.startswith("CAMPAIGN_SAMPLE") and "\"timed\"" in l]
print(statistics.median(xs))'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
if [ "${BUSY:-0}" = 1 ]; then
  for _ in 1 2; do yes > /dev/null & HOGS+=($!); done
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)  busy=${BUSY:-0}"
printf '%-4s %-9s %-13s %-13s %-11s %-13s %s\n' P count "helper median" "bare median" "helper/bare" \
  "old median" "old/bare"
IFS=, read -r -a SHAPE_LIST <<< "${SHAPES:-2 256,2 65536,2 1048576,2 16777216,4 256,4 65536}"
for shape in "${SHAPE_LIST[@]}"; do
  # shellcheck disable=SC2086 # split into words on purpose
  set -- $shape
  p=$1 count=$2
  timed=$TIMED
  if [ "$count" -ge 16777216 ]; then timed=$((TIMED / 10 > 20 ? TIMED / 10 : 20)); fi
  : > "$TMP/h" ; : > "$TMP/b" ; : > "$TMP/o"
  run_helper() {
    # shellcheck disable=SC2086 # HELPER_ARGS / OLD_ARGS are word lists
    "${MPIRUN[@]}" -np "$p" "$TMP/helper" --count "$count" --dtype fp32 --warmup "$WARMUP" --timed "$timed" ${HELPER_ARGS:-} \
      | sample_median >> "$TMP/h"
  }
  run_old() {
    if [ -n "${OLD_SRC:-}" ]; then
      # shellcheck disable=SC2086
      "${MPIRUN[@]}" -np "$p" "$TMP/old" --count "$count" --dtype fp32 --warmup "$WARMUP" --timed "$timed" ${OLD_ARGS:-} \
        | sample_median >> "$TMP/o"
    fi
  }
  run_bare() {
    "${MPIRUN[@]}" -np "$p" "$TMP/bare" allreduce "$count" "$WARMUP" "$timed" \
      | sed -n 's/.*median_s=\([^ ]*\).*/\1/p' >> "$TMP/b"
  }
  # The order rotates every repetition: the first program of a repetition (right after the
  # previous one freed its buffers) measured up to 2x slower at 1 Mi on this machine, whichever
  # program it was.
  for rep in $(seq 1 "$REPS"); do
    case $((rep % 3)) in
      1) run_helper; run_old; run_bare ;;
      2) run_bare; run_helper; run_old ;;
      0) run_old; run_bare; run_helper ;;
    esac
  done
  h=$(median < "$TMP/h"); b=$(median < "$TMP/b"); o=-; ob=-
  if [ -n "${OLD_SRC:-}" ]; then
    o=$(median < "$TMP/o"); ob=$(awk -v h="$o" -v b="$b" 'BEGIN {printf "%.2f", h / b}')
  fi
  printf '%-4s %-9s %-13.4g %-13.4g %-11s %-13s %s\n' "$p" "$count" "$h" "$b" \
    "$(awk -v h="$h" -v b="$b" 'BEGIN {printf "%.2f", h / b}')" "$o" "$ob"
  if [ "${VERBOSE:-0}" = 1 ]; then
    # Every repetition's median, in run order: shows whether a ratio is the programs' or the
    # launches' (at 1 Mi one launch of the same binary reads 1 ms, the next 2.4 ms).
    for f in h b o; do
      [ -s "$TMP/$f" ] && echo "  $f: $(tr '\n' ' ' < "$TMP/$f")"
    done
    # Launch modes: when the slowest launch of any program is over twice the fastest, launches
    # above their geometric mean count as "slow" (at 1 Mi here: ~1 ms against ~3 ms, for either
    # program). The median within each mode compares the loops, not how many launches of each
    # happened to land in the slow state.
    python3 - "$TMP" <<'PY'
import statistics, sys, os
d = sys.argv[1]
runs = {f: [float(x) for x in open(os.path.join(d, f)).read().split()] for f in "hbo" if os.path.getsize(os.path.join(d, f))}
lo, hi = min(min(v) for v in runs.values()), max(max(v) for v in runs.values())
cut = (lo * hi) ** 0.5 if hi > 2 * lo else float("inf")
for mode, keep in (("fast", lambda x: x < cut), ("slow", lambda x: x >= cut)):
    med = {f: statistics.median(xs) for f, v in runs.items() if (xs := [x for x in v if keep(x)])}
    n = {f: sum(1 for x in v if keep(x)) for f, v in runs.items()}
    ratio = {f: med[f] / med["b"] for f in med if f != "b" and "b" in med}
    print(f"  {mode} launches (cut {cut:.4g} s): " + ", ".join(
        f"{f} n={n[f]} median={med[f]:.4g}" + (f" ({ratio[f]:.2f}x bare)" if f in ratio else "")
        for f in med))
PY
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

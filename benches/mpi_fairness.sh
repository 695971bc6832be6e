#!/usr/bin/env bash
# Fairness of the `mpi` stack's helper (examples/mpi/allreduce_bench.c) against a bare
# MPI_Allreduce loop (benches/mpi_bare_allreduce.c): the same shapes, the same mpirun line as
# stacks/mpi.toml, alternating helper and bare loop REPS times so a busy moment of the shared
# machine hits both. Prints, per (P, count), the median over repetitions of each program's
# median round time (slowest rank) and the ratio helper / bare (target ≤ 1.1).
#
# Usage: benches/mpi_fairness.sh [REPS] [TIMED]   (defaults 7 and 200)
#        HELPER_SRC=old.c benches/mpi_fairness.sh   measures another version of the helper
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-7}
TIMED=${2:-200}
WARMUP=20
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mpicc -O2 -Wall -Wextra -o "$TMP/helper" "${HELPER_SRC:-examples/mpi/allreduce_bench.c}"
mpicc -O2 -Wall -Wextra -o "$TMP/bare" benches/mpi_bare_allreduce.c
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf '%-4s %-8s %-14s %-14s %s\n' P count "helper median" "bare median" "helper/bare"
for shape in "2 256" "2 65536" "4 256" "4 65536"; do
  set -- $shape
  p=$1 count=$2
  : > "$TMP/h" ; : > "$TMP/b"
  for _ in $(seq 1 "$REPS"); do
    "${MPIRUN[@]}" -np "$p" "$TMP/helper" --count "$count" --dtype fp32 --warmup "$WARMUP" --timed "$TIMED" \
      | python3 -c 'import json,sys,statistics
xs=[json.loads(l.split(" ",1)[1])["execute_s"] for l in sys.stdin if l.startswith("CAMPAIGN_SAMPLE") and "\"timed\"" in l]
print(statistics.median(xs))' >> "$TMP/h"
    "${MPIRUN[@]}" -np "$p" "$TMP/bare" "$count" "$WARMUP" "$TIMED" \
      | sed -n 's/.*median_s=\([^ ]*\).*/\1/p' >> "$TMP/b"
  done
  h=$(median < "$TMP/h"); b=$(median < "$TMP/b")
  printf '%-4s %-8s %-14s %-14s %s\n' "$p" "$count" "$h" "$b" "$(awk -v h="$h" -v b="$b" 'BEGIN {printf "%.2f", h / b}')"
done

#!/usr/bin/env bash
# Every op at P = 2 (issue 27, item 8): the host stack's best algorithm of the op and the `mpi`
# stack's helper, each against a bare MPI loop of the same op (benches/mpi_bare_collectives.c).
# Shapes: counts 256, 64 Ki, 1 Mi fp32 (count = the op's whole buffer per rank). The three
# programs alternate REPS times, the order rotating every repetition; printed per (op, count):
# the median over repetitions of each program's median round (slowest rank), the host's best
# algorithm, and the ratios host/bare (goal ≤ 1.0) and helper/bare (goal ≤ 1.1).
#
# Usage: benches/collectives.sh [REPS] [TIMED]   (defaults 5 and 200; 1 Mi runs TIMED/4)
#        CAMPAIGN=target/release/campaign ...     the campaign binary (default: target/debug)
#        OPS="allgather broadcast" COUNTS="256 65536" ...
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-5}
TIMED=${2:-200}
WARMUP=20
CAMPAIGN=${CAMPAIGN:-target/debug/campaign}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mpicc -O2 -Wall -Wextra -o "$TMP/helper" examples/mpi/allreduce_bench.c
mpicc -O2 -Wall -Wextra -o "$TMP/bare" benches/mpi_bare_collectives.c
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2)
sample_median() {
  python3 -c 'import json,sys,statistics
xs=[json.loads(l.split(" ",1)[1])["execute_s"] for l in sys.stdin if l.startswith("CAMPAIGN_SAMPLE") and "\"timed\"" in l]
print(statistics.median(xs))'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
variants() {
  case $1 in
    allreduce) echo "mesh ring twophase" ;;
    allgather|reduce_scatter) echo "ring direct" ;;
    broadcast) echo "tree scatter_allgather" ;;
    reduce) echo "tree direct" ;;
    alltoall) echo "pairwise direct" ;;
  esac
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-15s %-8s %-19s %-11s %-11s %-11s %-9s %s\n' op count "host best" "host s" "helper s" \
  "bare s" host/bare helper/bare
for op in ${OPS:-allreduce allgather reduce_scatter broadcast reduce alltoall}; do
  for count in ${COUNTS:-256 65536 1048576}; do
    timed=$TIMED
    if [ "$count" -ge 1048576 ]; then timed=$((TIMED / 4)); fi
    : > "$TMP/helper.t"; : > "$TMP/bare.t"
    for v in $(variants "$op"); do
      : > "$TMP/host-$v.t"
      printf '{"op":"%s","variant":"%s","p":2,"count":%s,"platform":"host","warmup_rounds":%s,"timed_rounds":%s}\n' \
        "$op" "$v" "$count" "$WARMUP" "$timed" > "$TMP/case-$v.json"
    done
    run_host() {
      for v in $(variants "$op"); do
        "$CAMPAIGN" bench allreduce --case-file "$TMP/case-$v.json" | sample_median >> "$TMP/host-$v.t"
      done
    }
    run_helper() {
      "${MPIRUN[@]}" "$TMP/helper" --op "$op" --count "$count" --warmup "$WARMUP" --timed "$timed" \
        | sample_median >> "$TMP/helper.t"
    }
    run_bare() {
      "${MPIRUN[@]}" "$TMP/bare" "$op" "$count" "$WARMUP" "$timed" \
        | sed -n 's/.*median_s=\([^ ]*\).*/\1/p' >> "$TMP/bare.t"
    }
    for rep in $(seq 1 "$REPS"); do
      case $((rep % 3)) in
        1) run_host; run_helper; run_bare ;;
        2) run_bare; run_host; run_helper ;;
        0) run_helper; run_bare; run_host ;;
      esac
    done
    best=""; best_t=""
    for v in $(variants "$op"); do
      t=$(median < "$TMP/host-$v.t")
      if [ -z "$best_t" ] || awk -v a="$t" -v b="$best_t" 'BEGIN {exit !(a < b)}'; then
        best=$v; best_t=$t
      fi
    done
    h=$(median < "$TMP/helper.t"); b=$(median < "$TMP/bare.t")
    printf '%-15s %-8s %-19s %-11.4g %-11.4g %-11.4g %-9s %s\n' "$op" "$count" "$best" "$best_t" \
      "$h" "$b" "$(awk -v x="$best_t" -v y="$b" 'BEGIN {printf "%.2f", x / y}')" \
      "$(awk -v x="$h" -v y="$b" 'BEGIN {printf "%.2f", x / y}')"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# Benchmark: CPU time per run against the shell floor — the shell loop of benches/engine_scale.sh
# and `campaign run --jobs 1` of N runs of the same trivial stack, each timed by GNU time (user +
# system, children included). CPU time is far less sensitive than wall time to other work on a
# shared machine, so it is the figure to read there; the loop and every binary run in interleaved
# pairs (loop, EXE1, EXE2, …, loop, EXE1, …) so a busy minute hits them alike.
#
# Usage: [PAIRS=k] [DIR=...] benches/engine_cpu.sh [EXE[,EXE...]] [N...]
#   EXE    campaign binaries, comma-separated (default target/release/campaign)
#   N      run counts (default 250 10000)
#   PAIRS  repetitions of each (loop, binaries) group per N (default 1)
#   DIR    where run dirs go (e.g. /dev/shm/... for tmpfs; default a temp dir on the disk)
# Prints one line per measurement (wall and CPU ms/run, the CPU ratio to the loop of the same
# group), then per N and binary the median CPU ratio and its range. Run dirs are kept until the
# script ends: on an ext4 without a journal (this project's VM) inodes deleted in the last minutes
# are skipped by the allocator one by one (`recently_deleted`), so removing one campaign's files
# would make the next one's inode creation several times dearer — the benchmark would charge its
# own clean-up to the engine. (10,000 runs take ≈ 250 MB and 60,000 inodes.)
set -euo pipefail
cd "$(dirname "$0")/.."
IFS=, read -r -a EXES <<< "${1:-target/release/campaign}"
shift $(($# > 0 ? 1 : 0))
NS=("$@")
[ ${#NS[@]} -gt 0 ] || NS=(250 10000)
PAIRS=${PAIRS:-1}
command -v /usr/bin/time > /dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
STACK="$PWD/benches/trivial_stack.sh"
# shellcheck source=benches/scale_plan.sh
. benches/scale_plan.sh
TMP=$(mktemp -d ${DIR:+-p "$DIR"})
trap 'rm -rf "$TMP"' EXIT
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
run=0
printf '%8s %4s %-28s %9s %9s %9s\n' N pair binary wall_ms cpu_ms cpu_ratio
for N in "${NS[@]}"; do
  scale_plan "$N" "$STACK" > "$TMP/plan-$N.toml"
  for ((pair = 1; pair <= PAIRS; pair++)); do
    read -r lw lu ls < <(/usr/bin/time -f '%e %U %S' bash -c \
      "i=0; while [ \$i -lt $N ]; do '$STACK' > /dev/null; i=\$((i + 1)); done" 2>&1)
    loop_cpu=$(python3 -c "print(($lu + $ls) * 1e3 / $N)")
    printf '%8d %4d %-28s %9.3f %9.3f %9s\n' "$N" "$pair" loop \
      "$(python3 -c "print($lw * 1e3 / $N)")" "$loop_cpu" 1.00 | tee -a "$TMP/lines"
    for exe in "${EXES[@]}"; do
      # A results dir of its own per campaign: a shared one would hand the next campaign the
      # history store of the one before (more to record and query).
      run=$((run + 1))
      read -r ew eu es < <(/usr/bin/time -f '%e %U %S' "$exe" run "$TMP/plan-$N.toml" \
        --results-dir "$TMP/out-$run" --jobs 1 --repeats 1 -q 2>&1 > /dev/null | tail -1)
      python3 - "$N" "$pair" "$exe" "$ew" "$eu" "$es" "$loop_cpu" <<'PY' | tee -a "$TMP/lines"
import sys
n, pair, exe = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
w, u, s, loop = map(float, sys.argv[4:8])
cpu = (u + s) * 1e3 / n
# GNU time counts CPU in 10 ms steps: a short loop can read 0 (no ratio then, "-").
ratio = f"{cpu / loop:9.2f}" if loop > 0 else f"{'-':>9}"
print(f"{n:8d} {pair:4d} {exe[-28:]:28s} {w * 1e3 / n:9.3f} {cpu:9.3f} {ratio}")
PY
    done
  done
done
python3 - "$TMP/lines" <<'PY'
import collections, statistics, sys
by = collections.defaultdict(list)
for line in open(sys.argv[1]):
    n, _pair, exe, _wall, _cpu, ratio = line.split()
    if exe != "loop" and ratio != "-":
        by[(int(n), exe)].append(float(ratio))
print("median CPU ratio to the loop (min–max), per N and binary:")
for (n, exe), r in sorted(by.items()):
    print(f"{n:8d} {exe:28s} {statistics.median(r):5.2f} ({min(r):.2f}–{max(r):.2f}), {len(r)} pair(s)")
PY

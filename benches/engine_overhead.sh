#!/usr/bin/env bash
# Benchmark 1: engine overhead per run. N runs of a trivial stack through `campaign run`
# (one at a time) against a plain shell loop spawning the same process N times.
#
# Usage: benches/engine_overhead.sh [N] [REPEATS] [EXE...]
#   N        runs per campaign (default 200)
#   REPEATS  repetitions (default 5); each repetition times the plain loop, then every EXE on
#            the disk and on tmpfs, back to back, so a busy moment of the shared machine hits
#            the baseline and the engines alike
#   EXE      campaign binaries to compare (default target/release/campaign)
# Prints one line per measurement, then the median and range (min–max) of each series; the
# ratio to the loop of the same repetition is the figure that holds on a shared machine.
#
# Run dirs are kept until the end: deleting thousands of inodes between repetitions makes the
# next repetition's inode allocation slower on ext4 (it skips recently deleted inodes), which
# would charge the benchmark's own cleanup to the engine.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
REPEATS=${2:-5}
shift $(($# > 2 ? 2 : $#))
EXES=("$@")
[ ${#EXES[@]} -gt 0 ] || EXES=(target/release/campaign)
STACK="$PWD/benches/trivial_stack.sh"
TMP=$(mktemp -d)
SHM=
[ -d /dev/shm ] && SHM=$(mktemp -d -p /dev/shm)
trap 'rm -rf "$TMP" ${SHM:+"$SHM"}' EXIT
counts=$(seq -s, 1 "$N")
cat > "$TMP/plan.toml" <<PLAN
[campaign]
name = "overhead"
[case]
platform = "host"
[axes]
variant = ["mesh"]
p = [2]
count = [$counts]
stacks = ["trivial"]
[rounds]
warmup = 0
timed = 1
[devices]
kind = "npu"
ids = "0-1"
[stacks.trivial]
command = ["$STACK"]
resource = "none"
PLAN
now() { date +%s.%N; }
ms_per_run() { python3 -c "import sys; print(f'{(float(sys.argv[2]) - float(sys.argv[1])) * 1e3 / int(sys.argv[3]):.3f}')" "$1" "$2" "$N"; }
RESULTS="$TMP/results.txt"
: > "$RESULTS"
for rep in $(seq "$REPEATS"); do
  t0=$(now)
  for _ in $(seq "$N"); do "$STACK" > /dev/null; done
  t1=$(now)
  loop=$(ms_per_run "$t0" "$t1")
  echo "rep=$rep series=plain_loop ms_per_run=$loop" | tee -a "$RESULTS"
  for i in "${!EXES[@]}"; do
    for base in "$TMP" ${SHM:+"$SHM"}; do
      fs=$([ "$base" = "$TMP" ] && echo disk || echo tmpfs)
      t0=$(now)
      "${EXES[$i]}" run "$TMP/plan.toml" --results-dir "$base/out-$rep-$i" --jobs 1 --repeats 1 -q > /dev/null
      t1=$(now)
      eng=$(ms_per_run "$t0" "$t1")
      over=$(python3 -c "print(f'{$eng - $loop:.3f}')")
      ratio=$(python3 -c "print(f'{$eng / $loop:.3f}')")
      echo "rep=$rep series=exe${i}_$fs ms_per_run=$eng overhead_ms_per_run=$over ratio_to_loop=$ratio" | tee -a "$RESULTS"
    done
  done
done
echo "# N=$N REPEATS=$REPEATS; exe<i> = ${EXES[*]}"
python3 - "$RESULTS" <<'PY'
import sys, statistics, collections
series = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    kv = dict(f.split("=") for f in line.split())
    for key in ("ms_per_run", "overhead_ms_per_run", "ratio_to_loop"):
        if key in kv:
            series[kv["series"]][key].append(float(kv[key]))
for name, cols in series.items():
    text = "  ".join(
        f"{k} median {statistics.median(v):.2f} (range {min(v):.2f}-{max(v):.2f})"
        for k, v in cols.items()
    )
    print(f"{name:16} {text}")
PY

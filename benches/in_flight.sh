#!/usr/bin/env bash
# Benchmark (issue 43, item 2): the default cap on runs in flight against `--jobs 1`, under the
# usual `ulimit -n 1024`. N runs of the trivial stack (benches/trivial_stack.sh, `resource =
# "none"`: the pool bounds nothing) with default options, then the same with `--jobs 1`, in
# interleaved pairs so both see the same load. Prints per pair: exit codes, wall and CPU
# (user + sys of campaign and its children) ms per run, and default / jobs-1 ratios. Before the
# default cap, every run started at once and a 1,000-run campaign ran out of descriptors.
# Exits 1 after the table when any campaign exited non-zero.
#
# Usage: benches/in_flight.sh [EXE] [N] [PAIRS]
#   EXE    campaign binary (default target/release/campaign)
#   N      runs per campaign (default 10000)
#   PAIRS  interleaved pairs (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
EXE=${1:-target/release/campaign}
N=${2:-10000}
PAIRS=${3:-3}
STACK="$PWD/benches/trivial_stack.sh"
# shellcheck source=benches/scale_plan.sh
. benches/scale_plan.sh
TMP=$(mktemp -d ${DIR:+-p "$DIR"})
trap 'rm -rf "$TMP"' EXIT
scale_plan "$N" "$STACK" > "$TMP/plan.toml"
# One campaign under the open-file limit; prints "rc wall_s cpu_s".
one() {
  python3 - "$EXE" "$TMP/plan.toml" "$TMP/out-$1" "$2" <<'PY'
import os, resource, subprocess, sys, time
exe, plan, out, extra = sys.argv[1:5]
def limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
t0 = time.monotonic()
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
argv = [exe, "run", plan, "--results-dir", out, "--repeats", "1", "-q"] + extra.split()
p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=limit)
t1 = time.monotonic()
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
if p.returncode != 0:
    sys.stderr.write(p.stderr.decode(errors="replace")[-400:])
print(p.returncode, t1 - t0, cpu)
PY
  rm -rf "$TMP/out-$1"
}
printf 'N=%s, ulimit -n 1024, load %s\n' "$N" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%5s %8s %12s %11s %8s %12s %11s %10s %9s\n' pair rc_def wall_def_ms cpu_def_ms rc_j1 wall_j1_ms cpu_j1_ms wall_ratio cpu_ratio
failed=0
for k in $(seq 1 "$PAIRS"); do
  read -r rc_d wall_d cpu_d < <(one "d$k" "")
  read -r rc_1 wall_1 cpu_1 < <(one "j$k" "--jobs 1")
  [ "$rc_d" = 0 ] && [ "$rc_1" = 0 ] || failed=$((failed + 1))
  python3 - "$k" "$N" "$rc_d" "$wall_d" "$cpu_d" "$rc_1" "$wall_1" "$cpu_1" <<'PY'
import sys
k, n = sys.argv[1], int(sys.argv[2])
rc_d, wd, cd, rc_1, w1, c1 = sys.argv[3], *map(float, sys.argv[4:6]), sys.argv[6], *map(float, sys.argv[7:9])
ms = lambda s: s * 1e3 / n
print(f"{k:>5} {rc_d:>8} {ms(wd):12.3f} {ms(cd):11.3f} {rc_1:>8} {ms(w1):12.3f} {ms(c1):11.3f} {wd / w1:10.2f} {cd / c1:9.2f}")
PY
done
# The table shows every exit code; a campaign that failed measured nothing, so say so in ours.
if [ "$failed" -gt 0 ]; then
  echo "in_flight: a campaign exited non-zero in $failed of $PAIRS pair(s) (rc columns above)" >&2
  exit 1
fi

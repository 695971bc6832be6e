#!/usr/bin/env bash
# Every benchmark script runs as documented (issue 50, item 4): runs each script in benches/ at
# its smallest meaningful size against one campaign binary, each under a timeout, each into a
# log. A smoke test, not a measurement: the figures in docs/performance.md come from the sizes
# (and mostly the release build) that file quotes. scripts/test.sh runs it after `cargo test`
# with the debug build, so CI does.
#
# Usage: benches/smoke.sh [EXE]   (default target/debug/campaign)
#   TIMEOUT=s  limit per script (default 180)
#   LOGS=dir   keep every script's log there (default a temp dir, removed at the end)
# Prints one line per script (name, exit, seconds); exits 1 naming every script that failed,
# with the tail of its log.
#
# Nothing is skipped: a script that needs something missing fails here as it would for anyone —
# mpicc and mpirun (collectives, mpi_fairness, mpi_states; scripts/install-mpi.sh installs OpenMPI), GNU
# time at /usr/bin/time (decide_cost, dry_run_1m, engine_cpu, report_scale, resume_cold,
# run_memory), python3, and root for resume_cold's cold page cache (it drops the page cache
# three times). No script documents a requirement as optional.
set -euo pipefail
EXE=${1:-}
[ -z "$EXE" ] || EXE=$(realpath "$EXE")
cd "$(dirname "$0")/.."
[ -n "$EXE" ] || EXE=$PWD/target/debug/campaign
[ -x "$EXE" ] || { echo "smoke: no campaign binary at $EXE" >&2; exit 2; }
TIMEOUT=${TIMEOUT:-180}
# GNU time is a bench tool, not a campaign one: installed here as scripts/install-mpi.sh
# installs OpenMPI (Debian's `time` package; root or sudo), so a fresh CI machine has it.
if [ ! -x /usr/bin/time ] && command -v apt-get > /dev/null; then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "smoke: apt-get install time (GNU time, /usr/bin/time)"
  $SUDO apt-get install -y -qq --no-install-recommends time > /dev/null \
    || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends time > /dev/null; }
fi
# The scripts' own knobs come from the lines below, never from the caller's environment.
unset DIR PAIRS FIRST COUNTS OPS SHAPES HELPER_SRC HELPER_ARGS OLD_SRC OLD_ARGS VERBOSE BUSY \
  PASS JOBS COMPARE_ARGS PLAN CASES CAMPAIGN HOST_VARIANTS HOST_OPS TIMED TIMED_BIG WARMUP \
  WARMUP_BIG GAP SEED RAW MUNGE
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
KEPT=${LOGS:+, logs in $LOGS}
LOGS=${LOGS:-$TMP/logs}
mkdir -p "$LOGS"

# Not run on their own: stacks and a sourced helper, each exercised by the scripts that use it.
HELPERS=(
  report_stack.sh   # report_scale.sh's stack
  scale_plan.sh     # sourced by engine_cpu, engine_scale, in_flight, resume_cold, run_memory
  sleep_stack.sh    # makespan.sh's stack
  trivial_stack.sh  # the stack of engine_overhead, engine_scale, engine_cpu, in_flight, resume_*
  smoke.sh          # this script
)

# compare_pairs.sh compares run dirs that already exist: two campaigns of plans/smoke.toml
# first, one repeat each (self_compare.sh below runs the plan's own three and judges rows).
compare_pairs() {
  for side in a b; do
    "$SMOKE_EXE" run plans/smoke.toml --results-dir "$SMOKE_TMP/pairs/$side" --repeats 1 -q \
      > /dev/null
  done
  COMPARE_ARGS=--no-history benches/compare_pairs.sh "$SMOKE_EXE" \
    "$SMOKE_TMP"/pairs/a/smoke/run_* "$SMOKE_TMP"/pairs/b/smoke/run_*
}
export -f compare_pairs
export SMOKE_EXE=$EXE SMOKE_TMP=$TMP
# dry_run_1m.sh at its smallest: plan_1m.toml cut to one count (5 × 4 × 2 × 20 = 800 cases).
sed '/^count = \[/,/\]/c count = [256]' benches/plan_1m.toml > "$TMP/plan_800.toml"

declare -A RAN=()
FAILED=()
printf '%-20s %5s %8s\n' script exit seconds
# smoke NAME COMMAND...: runs COMMAND (a benches/ script at its smallest size) into LOGS/NAME.log.
smoke() {
  local name=$1 rc=0 t0 t1
  shift
  t0=$(date +%s.%N)
  # Appended: a process a timeout left behind must not write over the lines after it.
  : > "$LOGS/$name.log"
  timeout -k 10 "$TIMEOUT" "$@" >> "$LOGS/$name.log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  case $rc in 124 | 137) echo "smoke: timed out after $TIMEOUT s" >> "$LOGS/$name.log" ;; esac
  RAN[$name]=1
  printf '%-20s %5s %8s\n' "$name" "$rc" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')"
  [ "$rc" -eq 0 ] || FAILED+=("$name")
}
start=$(date +%s)
smoke collectives env CAMPAIGN="$EXE" COUNTS=256 benches/collectives.sh 1 5
smoke compare_pairs bash -euo pipefail -c compare_pairs
smoke decide_cost benches/decide_cost.sh "$EXE" 12
smoke dry_run_1m env PLAN="$TMP/plan_800.toml" CASES=800 benches/dry_run_1m.sh 1 "$EXE"
smoke engine_cpu benches/engine_cpu.sh "$EXE" 20
smoke engine_overhead benches/engine_overhead.sh 10 1 "$EXE"
smoke engine_scale benches/engine_scale.sh "$EXE" 10 20
smoke in_flight benches/in_flight.sh "$EXE" 20 1
smoke makespan benches/makespan.sh "$EXE" 0.05
smoke mpi_fairness env SHAPES="2 256,4 256" benches/mpi_fairness.sh 1 5
smoke mpi_states env CAMPAIGN="$EXE" SHAPES="allreduce:256,alltoall:256" TIMED=5 WARMUP=2 \
  benches/mpi_states.sh 3
smoke report_scale env COUNTS=1 benches/report_scale.sh "$EXE" "$TMP/report_scale"
# The same run dir again, each report a first one (FIRST=1: renders, plots and records).
smoke report_scale_first env FIRST=1 benches/report_scale.sh "$EXE" "$TMP/report_scale"
smoke resume_cold benches/resume_cold.sh "$TMP/resume_cold" 20 "$EXE"
smoke resume_overhead benches/resume_overhead.sh 10 "$EXE"
smoke run_memory benches/run_memory.sh "$EXE" 10:1 10:5
smoke self_compare benches/self_compare.sh 1 plans/smoke.toml "$EXE"

# Every script is either run above or a helper: a new script needs its line here.
for f in benches/*.sh; do
  name=$(basename "$f" .sh)
  if [ -z "${RAN[$name]:-}" ] && [[ " ${HELPERS[*]} " != *" $name.sh "* ]]; then
    echo "$name: not run by benches/smoke.sh (add its smallest size, or list it as a helper)" \
      > "$LOGS/$name.log"
    printf '%-20s %5s %8s\n' "$name" - -
    FAILED+=("$name")
  fi
done
echo "smoke: $(( $(date +%s) - start )) s in all$KEPT"
if [ ${#FAILED[@]} -gt 0 ]; then
  for name in "${FAILED[@]}"; do
    echo "=== $name: last 30 lines of its log" >&2
    tail -n 30 "$LOGS/$name.log" >&2
  done
  echo "smoke: failed: ${FAILED[*]}" >&2
  exit 1
fi
echo "smoke: every script in benches/ ran"

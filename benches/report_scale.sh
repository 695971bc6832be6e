#!/usr/bin/env bash
# Benchmark: `campaign report RUN_DIR` of a real run dir of 10,000 runs × 51 rounds (1 warmup +
# 50 timed): 4 stacks of benches/report_stack.sh (speed factors 1.0, 1.1, 0.95, 1.3) × mesh/ring
# × P 2/4 × 625 counts. Makes the run dir once (`campaign run --jobs 2`, a few minutes), then
# times the report three times with `/usr/bin/time` (wall, CPU, peak RSS).
# `campaign run` renders and stamps the report itself, so a plain `campaign report` afterwards
# only proves the stamp; FIRST=1 times a first report each time instead — the report's stamp,
# its bootstrap memo and the results dir's history store are removed before each timing, so it
# resamples, renders, plots and records the run dir in a new history store, as `run`'s report
# step does. (Before 2026-12-07 the memo was kept: those FIRST=1 figures drew no interval.)
#
# Usage: [FIRST=1] [COUNTS=k] benches/report_scale.sh [EXE] [DIR]
#   EXE     campaign binary (default target/release/campaign)
#   DIR     where the plan and run dir go (default a temp dir, removed at the end); an existing
#           DIR/out run dir is reused, so two binaries can be timed on the same run dir
#   COUNTS  counts per stack × variant × P (default 625: the 10,000 runs above; 1 makes a
#           16-run dir, as benches/smoke.sh does)
set -euo pipefail
cd "$(dirname "$0")/.."
EXE=$(realpath "${1:-target/release/campaign}")
STACK="$PWD/benches/report_stack.sh"
if [ -n "${2:-}" ]; then
  DIR=$2
  mkdir -p "$DIR"
else
  DIR=$(mktemp -d)
  trap 'rm -rf "$DIR"' EXIT
fi
if ! ls -d "$DIR"/out/reportscale/run_* > /dev/null 2>&1; then
  {
    printf '[campaign]\nname = "reportscale"\n[case]\nplatform = "host"\n[axes]\n'
    printf 'variant = ["mesh", "ring"]\np = [2, 4]\n'
    printf 'count = [%s]\n' "$(seq -s, 1024 1024 $((1024 * ${COUNTS:-625})))"
    printf 'stacks = ["s1", "s2", "s3", "s4"]\n[rounds]\nwarmup = 1\ntimed = 50\n'
    printf '[devices]\nkind = "npu"\nids = "0-7"\n'
    for s in "s1 1.0" "s2 1.1" "s3 0.95" "s4 1.3"; do
      # shellcheck disable=SC2086 # split into words on purpose
      set -- $s
      printf '[stacks.%s]\ncommand = ["%s", "{{ count }}", "{{ p }}", "%s"]\nresource = "none"\n' \
        "$1" "$STACK" "$2"
    done
  } > "$DIR/plan.toml"
  "$EXE" run "$DIR/plan.toml" --results-dir "$DIR/out" --jobs 2 --repeats 1 -q --yes > /dev/null
fi
# shellcheck disable=SC2012 # run dir names are run_<timestamp>
RUN=$(ls -d "$DIR"/out/reportscale/run_* | tail -1)
for _ in 1 2 3; do
  if [ "${FIRST:-0}" = 1 ]; then
    rm -f "$RUN/reports/.report-stamp" "$RUN/reports/.bootstrap-memo" "$DIR"/out/history.sqlite*
  fi
  /usr/bin/time -f "report: %e s wall, %U s user, %S s sys, %M KiB peak RSS" \
    "$EXE" report "$RUN" > /dev/null
done

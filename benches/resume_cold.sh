#!/usr/bin/env bash
# Benchmark (issue 29, item 2): `campaign resume DIR -q` of a finished N-run dir with a warm and
# a cold page cache, for one or more campaign binaries, alternating them.
#
# The run dir is made once (and reused on later calls when DIR already holds one):
# `benches/scale_plan.sh`'s plan of N one-round runs of the trivial stack, with `min_p = 4`
# under the stack so every run is `skipped` (a 100,000-run dir in about a minute instead of
# 100,000 process spawns); PASS=1 makes real passed runs instead (`--jobs 2`; far slower).
# Each binary is copied to one path before it is timed: the journal's fingerprint context holds
# the executable's path, and a binary at another path would render every fingerprint again.
# Cold: `sync; echo 3 > /proc/sys/vm/drop_caches` before each resume (needs root).
#
# Usage: benches/resume_cold.sh DIR N EXE [EXE...]
#   DIR  where the run dir is made (kept)         N  planned runs (100000 in docs/performance.md)
#   EXE  campaign binaries to compare; the first one makes the run dir
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { sed -n 2,17p "$0"; exit 2; }
DIR=$(realpath -m "$1"); N=$2; shift 2
# Without this the cold rounds below would quietly be warm ones.
[ -w /proc/sys/vm/drop_caches ] ||
  { echo "needs root and a writable /proc/sys/vm/drop_caches (the cold rounds)" >&2; exit 2; }
EXES=(); for e in "$@"; do EXES+=("$(realpath "$e")"); done
STACK="$PWD/benches/trivial_stack.sh"
# shellcheck source=benches/scale_plan.sh
. benches/scale_plan.sh
mkdir -p "$DIR/bin"
BIN="$DIR/bin/campaign"
use() { cp "$1" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"; }
# shellcheck disable=SC2012 # run dir names are run_<timestamp>
run_dir=$(ls -d "$DIR"/out/scale/run_* 2>/dev/null | head -1 || true)
if [ -z "$run_dir" ]; then
  scale_plan "$N" "$STACK" > "$DIR/plan.toml"
  [ "${PASS:-0}" = 1 ] || echo 'min_p = 4' >> "$DIR/plan.toml"
  use "${EXES[0]}"
  echo "making a $N-run dir ($( [ "${PASS:-0}" = 1 ] && echo pass || echo skipped ) runs) ..." >&2
  /usr/bin/time -f "made in %e s, %M KiB" "$BIN" run "$DIR/plan.toml" --results-dir "$DIR/out" \
    --jobs "${JOBS:-2}" --repeats 1 -q --yes > /dev/null || true
  # shellcheck disable=SC2012
  run_dir=$(ls -d "$DIR"/out/scale/run_* | head -1)
fi
# shellcheck disable=SC2012 # case folder names are case ids (no newlines)
echo "run dir: $run_dir ($(ls "$run_dir/cases" | wc -l) case folders)"
echo "$(date -u +%FT%TZ) $(uptime)"
# One timed resume; exit 5 (nothing was run: every run skipped) is the skipped run dir's answer,
# any other failure stops the benchmark instead of printing its time.
timed() {
  local rc=0
  /usr/bin/time -o "$DIR/time" -f "%e s %U u %S s %M KiB" "$BIN" resume "$run_dir" -q \
    > /dev/null 2> "$DIR/resume.err" || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then
    tail -n 20 "$DIR/resume.err" >&2
    echo "resume exited $rc" >&2
    return 1
  fi
  tail -1 "$DIR/time"
}
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; timed; }
for round in 1 2 3; do
  for exe in "${EXES[@]}"; do
    use "$exe"
    # Untimed: fills the page cache (the other binary's cold run emptied it) and, the first
    # time, lets a binary record its fingerprint context.
    "$BIN" resume "$run_dir" -q > /dev/null 2>&1 || true
    warm=$(timed)
    echo "round $round $(basename "$exe") warm: $warm"
    cold=$(cold)
    echo "round $round $(basename "$exe") cold: $cold"
  done
done
echo "$(date -u +%FT%TZ) $(uptime)"

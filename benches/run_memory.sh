#!/usr/bin/env bash
# Benchmark: peak RSS of `campaign run` per planned run (issue 29, item 4). For each N:R pair,
# `campaign run --jobs 1` of N runs of a trivial stack that prints R timed samples (the plan of
# benches/scale_plan.sh: one case per count 1..N, one stack, no devices), under
# `/usr/bin/time -f "%e s %M KiB"`; prints wall time, peak RSS and KiB per planned run. Two round
# counts at the same N show what grows with rounds (the results themselves) and what does not
# (the engine's own state). Results go in docs/performance.md, "Memory per run".
#
# Usage: benches/run_memory.sh [EXE] [N:R...]
#   EXE  campaign binary (default target/release/campaign)
#   N:R  runs and timed rounds per run (default 10000:1 10000:51 100000:1)
# Set DIR=/dev/shm/... to put the run dirs on tmpfs (memory figures do not depend on the disk);
# the default is a temp dir on the disk. Needs GNU time at /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
EXE=$(realpath "${1:-target/release/campaign}")
shift $(($# > 0 ? 1 : 0))
PAIRS=("$@")
[ ${#PAIRS[@]} -gt 0 ] || PAIRS=(10000:1 10000:51 100000:1)
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 4; }
# shellcheck source=benches/scale_plan.sh
. benches/scale_plan.sh
TMP=$(mktemp -d ${DIR:+-p "$DIR"})
trap 'rm -rf "$TMP"' EXIT
# The stack: $CAMPAIGN_TIMED timed samples (the engine passes the case's rounds), then done.
STACK="$TMP/rounds_stack.sh"
cat > "$STACK" <<'SH'
#!/bin/sh
exec awk -v t="${CAMPAIGN_TIMED:-1}" 'BEGIN {
  for (i = 1; i <= t; i++) printf "CAMPAIGN_SAMPLE {\"phase\":\"timed\",\"execute_s\":0.000001,\"ok\":true}\n";
  print "CAMPAIGN_DONE {\"correctness\":\"pass\"}";
}'
SH
chmod +x "$STACK"
echo "exe: $EXE"
echo "host: $(nproc) CPUs; $(uptime)"
printf '%8s %6s %9s %12s %12s\n' N rounds wall_s peak_KiB KiB_per_run
for pair in "${PAIRS[@]}"; do
  N=${pair%%:*} R=${pair##*:}
  scale_plan "$N" "$STACK" | sed "s/^timed = 1\$/timed = $R/" > "$TMP/plan.toml"
  /usr/bin/time -o "$TMP/time" -f "%e %M" "$EXE" run "$TMP/plan.toml" --results-dir "$TMP/out" \
    --jobs 1 --repeats 1 -q --yes > /dev/null
  read -r wall kib < "$TMP/time"
  python3 -c "import sys; n, r, w, k = sys.argv[1:]; print(f'{int(n):8d} {int(r):6d} {float(w):9.1f} {int(k):12d} {int(k) / int(n):12.2f}')" \
    "$N" "$R" "$wall" "$kib"
  rm -rf "$TMP/out"
done
echo "done: $(uptime)"

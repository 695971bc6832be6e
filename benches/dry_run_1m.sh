#!/usr/bin/env bash
# Plan-expansion benchmark: expand benches/plan_1m.toml (exactly 1,000,000 cases) through
# `campaign dry-run --format csv` into /dev/null and report wall time, CPU time and peak RSS.
# Results go in docs/performance.md, section "## Plan expansion".
#
# Usage: benches/dry_run_1m.sh [runs] [EXE]   (needs /usr/bin/time, GNU time)
#   runs  timed runs of each command (default 5)
#   EXE   campaign binary (default: `cargo build --release`, then target/release/campaign)
#   PLAN=plan.toml CASES=n ...   expand another plan of exactly n cases instead (CASES is
#         required with PLAN; benches/smoke.sh expands plan_1m.toml cut to one count)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
plan=${PLAN:-benches/plan_1m.toml}
if [[ -n "${PLAN:-}" && -z "${CASES:-}" ]]; then
    echo "PLAN needs CASES (the plan's number of cases)" >&2
    exit 2
fi
cases=${CASES:-1000000}

if [[ -n "${2:-}" ]]; then
    exe=$2
else
    cargo build --release --quiet
    exe=target/release/campaign
fi
if [[ ! -x /usr/bin/time ]]; then
    echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2
    exit 4
fi

if ! lines=$("$exe" dry-run "$plan" --format csv 2> /tmp/dry_run_1m.err.$$ | wc -l); then
    tail -n 30 /tmp/dry_run_1m.err.$$ >&2
    rm -f /tmp/dry_run_1m.err.$$
    echo "dry-run of $plan failed" >&2
    exit 1
fi
rm -f /tmp/dry_run_1m.err.$$
if [[ "$lines" -ne $((cases + 1)) ]]; then
    echo "expected $cases cases plus a header, got $lines lines" >&2
    exit 1
fi

measure() {
    local label=$1; shift
    for i in $(seq "$runs"); do
        if ! /usr/bin/time -v "$@" > /dev/null 2> /tmp/dry_run_1m.time.$$; then
            # A failed command's time is no measurement: show why and stop.
            tail -n 30 /tmp/dry_run_1m.time.$$ >&2
            rm -f /tmp/dry_run_1m.time.$$
            echo "$label failed: $*" >&2
            exit 1
        fi
        awk -v label="$label" -v run="$i" '
            /Elapsed \(wall clock\)/ { n = split($NF, t, ":"); wall = (n == 3) ? t[1]*3600 + t[2]*60 + t[3] : t[1]*60 + t[2] }
            /User time/ { user = $NF }
            /System time/ { sys = $NF }
            /Maximum resident set size/ { rss = $NF }
            END { printf "%-28s run %d: wall %.2f s  cpu %.2f s  peak RSS %.1f MiB\n", label, run, wall, user + sys, rss / 1024 }
        ' /tmp/dry_run_1m.time.$$
    done
    rm -f /tmp/dry_run_1m.time.$$
}

echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
measure "dry-run --format csv" "$exe" dry-run "$plan" --format csv
measure "validate (check pass only)" "$exe" validate "$plan"
measure "dry-run --format json" "$exe" dry-run "$plan" --format json

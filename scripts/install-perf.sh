#!/usr/bin/env bash
# Install Linux perf from Debian's package (linux-perf), for `cpu` and `counters` profiles and
# their tests. Idempotent: does nothing when `perf` is already on PATH and records. Needs root
# (as on CI and the developers' machines); uses sudo when run as another user. It checks that
# perf may profile one's own processes (kernel.perf_event_paranoid <= 2) and says so if not.
set -euo pipefail

if ! command -v perf >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            SUDO="sudo"
        else
            echo "install-perf: not root and no sudo; install linux-perf by hand" >&2
            exit 4
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    echo "install-perf: apt-get update"
    $SUDO apt-get update -qq
    echo "install-perf: apt-get install linux-perf"
    $SUDO apt-get install -y -qq --no-install-recommends linux-perf >/dev/null
fi
if ! command -v perf >/dev/null 2>&1; then
    echo "install-perf: apt-get finished but perf is still not on PATH" >&2
    exit 4
fi
scratch=$(mktemp -d)
if ! perf record --quiet --output "$scratch/check.data" -- true 2>"$scratch/err"; then
    echo "install-perf: perf is installed but refuses to record: $(head -n 3 "$scratch/err")" >&2
    echo "install-perf: kernel.perf_event_paranoid = $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?') (2 or less lets a user profile own processes)" >&2
    rm -rf "$scratch"
    exit 4
fi
rm -rf "$scratch"
echo "install-perf: perf present and recording ($(command -v perf))"

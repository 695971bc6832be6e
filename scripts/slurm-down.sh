#!/usr/bin/env bash
# Stop the private Slurm cluster started by scripts/slurm-up.sh.
#
# Usage: scripts/slurm-down.sh [DIR]    (DIR default: $CAMPAIGN_SLURM_DIR or /tmp/campaign-slurm)
#
# Cancels the cluster's jobs, then stops slurmd, slurmctld and munged (munged only when
# slurm-up.sh started it) by the pids recorded under DIR/run: SIGTERM, then SIGKILL after 5 s.
# Quiet and successful when nothing runs. DIR itself is kept (logs, jobcomp file).
set -uo pipefail

DIR=${1:-${CAMPAIGN_SLURM_DIR:-/tmp/campaign-slurm}}
export SLURM_CONF="$DIR/slurm.conf"

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Jobs first, so no job script outlives the daemons that would report it.
if alive "$DIR/run/slurmctld.pid"; then
  jobs=$(timeout 5 squeue -h -o '%i' 2>/dev/null | tr '\n' ' ')
  if [ -n "${jobs// /}" ]; then
    # shellcheck disable=SC2086
    timeout 5 scancel $jobs >/dev/null 2>&1 || true
  fi
fi

stop() {
  local pidfile="$DIR/run/$1.pid" pid
  alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
  rm -f "$pidfile"
  echo "slurm-down: $1 (pid $pid) needed SIGKILL" >&2
}

stop slurmd
stop slurmctld
stop munged
exit 0

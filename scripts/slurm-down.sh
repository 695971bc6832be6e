#!/usr/bin/env bash
# Stop the private Slurm cluster started by scripts/slurm-up.sh.
#
# Usage: scripts/slurm-down.sh [DIR]    (DIR default: $CAMPAIGN_SLURM_DIR or /tmp/campaign-slurm)
#
# Cancels the cluster's jobs, then stops every slurmd (one per node), slurmctld and munged
# (munged only when slurm-up.sh started it) by the pids recorded under DIR/run: SIGTERM, then SIGKILL after 5 s.
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

# All daemons at once: each takes about 2 s to shut down, in parallel the whole stop does too.
pids=()
for pidfile in "$DIR"/run/slurmd*.pid "$DIR/run/slurmctld.pid" "$DIR/run/munged.pid"; do
  name=$(basename "$pidfile" .pid)
  if alive "$pidfile"; then
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null && pids+=("$name:$pid")
  fi
  rm -f "$pidfile"
done
for _ in $(seq 50); do
  left=()
  for entry in "${pids[@]}"; do
    kill -0 "${entry#*:}" 2>/dev/null && left+=("$entry")
  done
  pids=("${left[@]}")
  [ ${#pids[@]} -eq 0 ] && exit 0
  sleep 0.1
done
for entry in "${pids[@]}"; do
  kill -KILL "${entry#*:}" 2>/dev/null
  echo "slurm-down: ${entry%%:*} (pid ${entry#*:}) needed SIGKILL" >&2
done
exit 0

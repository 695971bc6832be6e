#!/usr/bin/env bash
# Start a private single-node Slurm cluster for campaign's Slurm executor tests (needs root).
#
# Usage: scripts/slurm-up.sh [DIR]      (DIR default: $CAMPAIGN_SLURM_DIR or /tmp/campaign-slurm)
#
# Idempotent: installs Debian's slurmctld, slurmd, slurm-client and munge when missing, writes
# slurm.conf/gres.conf, 8 fake NPU character devices, state, logs and the jobcomp file under DIR,
# starts munged (as user munge, only if no munged answers yet), slurmctld and slurmd as daemons
# with SLURM_CONF=DIR/slurm.conf, and waits until the node is idle. When the cluster is already
# up it only checks it. The last line on stdout is `export SLURM_CONF=DIR/slurm.conf`.
# The node advertises 16 CPUs (config_overrides) and Gres=gpu:npu:8, so a job asking for
# `--gres=gpu:P` gets CUDA_VISIBLE_DEVICES / SLURM_JOB_GPUS, mirrored by a TaskProlog as
# NPU_VISIBLE_DEVICES. scripts/slurm-down.sh stops what this started.
set -euo pipefail

DIR=${1:-${CAMPAIGN_SLURM_DIR:-/tmp/campaign-slurm}}
CPUS=${CAMPAIGN_SLURM_CPUS:-16}
NPUS=${CAMPAIGN_SLURM_NPUS:-8}
WAIT_S=${CAMPAIGN_SLURM_WAIT:-30}
NODE=$(hostname -s)
CONF="$DIR/slurm.conf"
export SLURM_CONF="$CONF"

log() { echo "slurm-up: $*" >&2; }
die() {
  log "error: $*"
  for f in "$DIR"/log/slurmctld.log "$DIR"/log/slurmd.log; do
    if [ -f "$f" ]; then
      log "--- last lines of $f"
      tail -n 15 "$f" >&2
    fi
  done
  log "stop what did start with: scripts/slurm-down.sh $DIR"
  exit 1
}

case "$CPUS:$NPUS" in
  *[!0-9:]* | 0:* | *:0 | :* | *:) die "CAMPAIGN_SLURM_CPUS and CAMPAIGN_SLURM_NPUS must be positive integers" ;;
esac
if [ "$(id -u)" -ne 0 ]; then
  die "must run as root (slurmctld and slurmd run as root daemons here)"
fi

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

node_state() { timeout 5 sinfo -h -N -n "$NODE" -o '%T' 2>/dev/null | head -n 1; }

wait_idle() {
  local deadline=$((SECONDS + WAIT_S)) state=""
  while [ $SECONDS -lt $deadline ]; do
    state=$(node_state || true)
    case "$state" in
      idle | mixed | allocated) return 0 ;;
      down* | drain* | "unknown"*)
        # A node remembered as down from an earlier session (or not yet registered) is resumed.
        timeout 5 scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    sleep 0.2
  done
  die "node $NODE not idle after ${WAIT_S}s (sinfo says: '${state:-no answer}')"
}

# Already up: check and report.
if alive "$DIR/run/slurmctld.pid" && alive "$DIR/run/slurmd.pid"; then
  wait_idle
  log "already running in $DIR"
  echo "export SLURM_CONF=$CONF"
  exit 0
fi

# 1. Packages.
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
  ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  log "installing slurmctld slurmd slurm-client munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
fi

# 2. Folder: config, fake devices, state, logs.
mkdir -p "$DIR"/{dev,state/ctld,state/d,log,run}
for i in $(seq 0 $((NPUS - 1))); do
  # Slurm accepts only character devices as gres.conf File= entries; 1,3 is /dev/null's.
  [ -c "$DIR/dev/npu$i" ] || { rm -f "$DIR/dev/npu$i"; mknod "$DIR/dev/npu$i" c 1 3; }
done
touch "$DIR/jobcomp.txt"

cat >"$DIR/task_prolog.sh" <<'EOF'
#!/bin/sh
# Slurm's TaskProlog: mirror the granted gpu-type GRES as NPU_VISIBLE_DEVICES.
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  echo "export NPU_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
fi
EOF
chmod 755 "$DIR/task_prolog.sh"

cat >"$DIR/gres.conf" <<EOF
NodeName=$NODE Name=gpu Type=npu File=$DIR/dev/npu[0-$((NPUS - 1))]
EOF

cat >"$CONF" <<EOF
# Written by scripts/slurm-up.sh: a single-node cluster without cgroups or a database.
ClusterName=campaign
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state/ctld
SlurmdSpoolDir=$DIR/state/d
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
TaskProlog=$DIR/task_prolog.sh
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.txt
MpiDefault=none
ReturnToService=2
KillWait=2
OverTimeLimit=0
GresTypes=gpu
NodeName=$NODE CPUs=$CPUS Gres=gpu:npu:$NPUS State=UNKNOWN
PartitionName=campaign Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

# 3. munge: reuse a munged that answers; otherwise start one as user munge.
if ! (munge -n </dev/null | unmunge >/dev/null) 2>/dev/null; then
  [ -f /etc/munge/munge.key ] || mungekey --create
  chown munge:munge /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge /var/lib/munge /var/log/munge
  runuser -u munge -- munged
  for _ in $(seq 50); do
    [ -s /run/munge/munged.pid ] && break
    sleep 0.1
  done
  cp /run/munge/munged.pid "$DIR/run/munged.pid"
  (munge -n </dev/null | unmunge >/dev/null) 2>/dev/null || die "munged started but does not answer"
fi

# 4. Daemons (each writes its pid file; slurm-down.sh reads them).
alive "$DIR/run/slurmctld.pid" || slurmctld -f "$CONF" || die "slurmctld did not start"
alive "$DIR/run/slurmd.pid" || slurmd -f "$CONF" || die "slurmd did not start"
wait_idle
log "up in $DIR (node $NODE: $CPUS CPUs, gpu:npu:$NPUS)"
echo "export SLURM_CONF=$CONF"

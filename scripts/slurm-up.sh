#!/usr/bin/env bash
# Start a private two-node Slurm cluster on this machine for campaign's Slurm executor tests
# (needs root).
#
# Usage: scripts/slurm-up.sh [DIR]      (DIR default: $CAMPAIGN_SLURM_DIR or /tmp/campaign-slurm)
#
# Two slurmd run on localhost under their own node names (n1, n2; CAMPAIGN_SLURM_NODES more),
# each with its own port, spool dir, pid file and log file (`%n` in slurm.conf), all on
# 127.0.0.1. Debian's slurmd (22.05) accepts `-N NAME` for this; no rebuild is needed.
#
# Idempotent: installs Debian's slurmctld, slurmd, slurm-client and munge when missing, writes
# slurm.conf/gres.conf, 8 fake NPU character devices per node, state, logs and the jobcomp file
# under DIR, starts munged (as user munge, only if no munged answers yet), slurmctld and one
# slurmd per node as daemons with SLURM_CONF=DIR/slurm.conf, and waits until every node is
# idle. When the cluster is already up it only checks it (and restarts a slurmd that is gone,
# e.g. after a test killed one). A cluster of an older layout in DIR is stopped and replaced.
# The last line on stdout is `export SLURM_CONF=DIR/slurm.conf`.
# Each node advertises 16 CPUs (config_overrides) and Gres=gpu:npu:8, so a job asking for
# `--gres=gpu:P` gets CUDA_VISIBLE_DEVICES / SLURM_JOB_GPUS per node, mirrored by a TaskProlog
# as NPU_VISIBLE_DEVICES. Ports: slurmctld CAMPAIGN_SLURM_PORT (6817), node k at
# CAMPAIGN_SLURM_NODE_PORT + k - 1 (16818, 16819). scripts/slurm-down.sh stops what this started.
set -euo pipefail

DIR=${1:-${CAMPAIGN_SLURM_DIR:-/tmp/campaign-slurm}}
CPUS=${CAMPAIGN_SLURM_CPUS:-16}
NPUS=${CAMPAIGN_SLURM_NPUS:-8}
NODES=${CAMPAIGN_SLURM_NODES:-2}
CTLD_PORT=${CAMPAIGN_SLURM_PORT:-6817}
NODE_PORT=${CAMPAIGN_SLURM_NODE_PORT:-16818}
WAIT_S=${CAMPAIGN_SLURM_WAIT:-30}
CTLD_HOST=$(hostname -s)
CONF="$DIR/slurm.conf"
LAYOUT="# layout: $NODES nodes on localhost"
export SLURM_CONF="$CONF"

log() { echo "slurm-up: $*" >&2; }
die() {
  log "error: $*"
  for f in "$DIR"/log/slurmctld.log "$DIR"/log/slurmd*.log; do
    if [ -f "$f" ]; then
      log "--- last lines of $f"
      tail -n 15 "$f" >&2
    fi
  done
  log "stop what did start with: scripts/slurm-down.sh $DIR"
  exit 1
}

case "$CPUS:$NPUS:$NODES:$CTLD_PORT:$NODE_PORT" in
  *[!0-9:]* | 0:* | *:0:* | *::* | :* | *:) die "CAMPAIGN_SLURM_{CPUS,NPUS,NODES,PORT,NODE_PORT} must be positive integers" ;;
esac
if [ "$(id -u)" -ne 0 ]; then
  die "must run as root (slurmctld and slurmd run as root daemons here)"
fi

NAMES=()
for k in $(seq 1 "$NODES"); do NAMES+=("n$k"); done
NODESET="n[1-$NODES]"

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Every node's state, one `name state` line each.
node_states() { timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null; }

wait_idle() {
  local deadline=$((SECONDS + WAIT_S)) states="" name state ready
  while [ $SECONDS -lt $deadline ]; do
    states=$(node_states || true)
    ready=0
    for name in "${NAMES[@]}"; do
      state=$(awk -v n="$name" '$1 == n { print $2; exit }' <<<"$states")
      case "$state" in
        idle | mixed | allocated | completing) ready=$((ready + 1)) ;;
        down* | drain* | unknown* | "")
          # A node remembered as down (from an earlier session, or a test that killed its
          # slurmd) is resumed once its slurmd runs again.
          timeout 5 scontrol update NodeName="$name" State=RESUME >/dev/null 2>&1 || true ;;
      esac
    done
    [ "$ready" -eq "$NODES" ] && return 0
    sleep 0.2
  done
  die "nodes not all idle after ${WAIT_S}s (sinfo says: '${states:-no answer}')"
}

start_slurmd() {
  local name=$1
  alive "$DIR/run/slurmd-$name.pid" && return 0
  mkdir -p "$DIR/state/d/$name"
  slurmd -f "$CONF" -N "$name" || die "slurmd $name did not start"
}

all_alive() {
  alive "$DIR/run/slurmctld.pid" || return 1
  for name in "${NAMES[@]}"; do alive "$DIR/run/slurmd-$name.pid" || return 1; done
}

# An older layout (the single-node cluster, or another node count) is stopped first.
if [ -f "$CONF" ] && ! grep -qxF "$LAYOUT" "$CONF"; then
  log "replacing the cluster of another layout in $DIR"
  bash "$(dirname "$0")/slurm-down.sh" "$DIR"
  rm -rf "$DIR/state"
fi

# Already up: restart a slurmd that is gone, check and report.
if alive "$DIR/run/slurmctld.pid" && grep -qxF "$LAYOUT" "$CONF"; then
  restarted=""
  for name in "${NAMES[@]}"; do
    if ! alive "$DIR/run/slurmd-$name.pid"; then
      start_slurmd "$name"
      restarted="$restarted $name"
    fi
  done
  wait_idle
  if [ -n "$restarted" ]; then log "restarted slurmd of$restarted in $DIR"; fi
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

# 2. Folder: config, fake devices per node, state, logs.
mkdir -p "$DIR"/{state/ctld,state/d,log,run}
: >"$DIR/gres.conf.tmp"
node_lines=""
for k in $(seq 1 "$NODES"); do
  name="n$k"
  mkdir -p "$DIR/dev/$name"
  for i in $(seq 0 $((NPUS - 1))); do
    # Slurm accepts only character devices as gres.conf File= entries; 1,3 is /dev/null's.
    f="$DIR/dev/$name/npu$i"
    [ -c "$f" ] || { rm -f "$f"; mknod "$f" c 1 3; }
  done
  echo "NodeName=$name Name=gpu Type=npu File=$DIR/dev/$name/npu[0-$((NPUS - 1))]" >>"$DIR/gres.conf.tmp"
  node_lines="${node_lines}NodeName=$name NodeAddr=127.0.0.1 NodeHostname=$name Port=$((NODE_PORT + k - 1)) CPUs=$CPUS Gres=gpu:npu:$NPUS State=UNKNOWN
"
done
mv -f "$DIR/gres.conf.tmp" "$DIR/gres.conf"
touch "$DIR/jobcomp.txt"

cat >"$DIR/task_prolog.sh" <<'EOF'
#!/bin/sh
# Slurm's TaskProlog: mirror the granted gpu-type GRES as NPU_VISIBLE_DEVICES.
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  echo "export NPU_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
fi
EOF
chmod 755 "$DIR/task_prolog.sh"

cat >"$CONF" <<EOF
# Written by scripts/slurm-up.sh: a cluster of $NODES nodes on this machine (one slurmd per
# node, all on 127.0.0.1), without cgroups or a database.
$LAYOUT
ClusterName=campaign
SlurmctldHost=$CTLD_HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state/ctld
SlurmdSpoolDir=$DIR/state/d/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
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
# A node whose slurmd is gone is DOWN within ~SlurmdTimeout; its jobs end NODE_FAIL.
SlurmdTimeout=10
KillWait=2
OverTimeLimit=0
GresTypes=gpu
${node_lines}PartitionName=campaign Nodes=$NODESET Default=YES MaxTime=INFINITE State=UP
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
for name in "${NAMES[@]}"; do start_slurmd "$name"; done
wait_idle
log "up in $DIR (nodes ${NAMES[*]}: $CPUS CPUs and gpu:npu:$NPUS each)"
echo "export SLURM_CONF=$CONF"

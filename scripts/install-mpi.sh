#!/usr/bin/env bash
# Install OpenMPI (compiler wrapper mpicc and launcher mpirun) from Debian's packages, for the
# `mpi` stack and its tests. Idempotent: does nothing when both are already on PATH.
# Needs root (as on CI and the developers' machines); uses sudo when run as another user.
set -euo pipefail

if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
    echo "install-mpi: OpenMPI already present ($(command -v mpicc), $(command -v mpirun))"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-mpi: not root and no sudo; install openmpi-bin libopenmpi-dev by hand" >&2
        exit 4
    fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-mpi: apt-get update"
$SUDO apt-get update -qq
echo "install-mpi: apt-get install openmpi-bin libopenmpi-dev"
$SUDO apt-get install -y -qq --no-install-recommends openmpi-bin libopenmpi-dev >/dev/null

if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    echo "install-mpi: apt-get finished but mpicc/mpirun are still not on PATH" >&2
    exit 4
fi
echo "install-mpi: installed $(mpirun --version 2>/dev/null | head -n 1)"

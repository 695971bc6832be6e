#!/bin/sh
# Build campaign's HCCL allreduce helper against a CANN toolkit.
#
#   sh examples/hccl/build.sh CANN_ROOT OUTPUT
#
# CANN_ROOT is the toolkit root (ASCEND_HOME_PATH, e.g. /usr/local/Ascend/ascend-toolkit/latest).
# Headers (acl/acl.h, hccl/hccl.h) and libraries (libascendcl.so, libhccl.so) are searched under
# it, because their place differs between CANN releases (include/ vs <arch>-linux/include/,
# lib64/ vs <arch>-linux/lib64/). The rpath lets the helper run without LD_LIBRARY_PATH.
set -eu

if [ "$#" -ne 2 ]; then
    echo "usage: sh build.sh CANN_ROOT OUTPUT" >&2
    exit 2
fi
cann=$1
out=$2
src=$(dirname "$0")/hccl_allreduce.cpp

if [ ! -d "$cann" ]; then
    echo "build.sh: CANN not found: $cann is not a directory (set ASCEND_HOME_PATH)" >&2
    exit 1
fi

inc=""
for d in "$cann/include" "$cann"/*-linux/include "$cann/runtime/include" "$cann/compiler/include"; do
    if [ -f "$d/acl/acl.h" ] && [ -f "$d/hccl/hccl.h" ]; then inc=$d; break; fi
done
if [ -z "$inc" ]; then
    h=$(find -L "$cann" -path '*/hccl/hccl.h' 2>/dev/null | head -n 1)
    [ -n "$h" ] && inc=$(dirname "$(dirname "$h")")
fi
lib=""
for d in "$cann/lib64" "$cann"/*-linux/lib64 "$cann/runtime/lib64"; do
    if [ -f "$d/libhccl.so" ] && [ -f "$d/libascendcl.so" ]; then lib=$d; break; fi
done
if [ -z "$lib" ]; then
    l=$(find -L "$cann" -name libhccl.so 2>/dev/null | head -n 1)
    [ -n "$l" ] && lib=$(dirname "$l")
fi
if [ -z "$inc" ] || [ ! -f "$inc/acl/acl.h" ]; then
    echo "build.sh: acl/acl.h and hccl/hccl.h not found under $cann" >&2
    exit 1
fi
if [ -z "$lib" ] || [ ! -f "$lib/libascendcl.so" ]; then
    echo "build.sh: libhccl.so and libascendcl.so not found under $cann" >&2
    exit 1
fi

mkdir -p "$(dirname "$out")"
set -x
g++ -std=c++17 -O2 -pthread -Wall -Wextra -I"$inc" "$src" -L"$lib" -Wl,-rpath,"$lib" \
    -lhccl -lascendcl -o "$out"

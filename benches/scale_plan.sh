#!/usr/bin/env bash
# Sourced by the engine benchmarks (engine_scale.sh, engine_cpu.sh): `scale_plan N STACK` prints
# a plan of N one-round runs of the program STACK (one case per count 1..N, one stack, no
# devices needed), so both measure the same campaign.
scale_plan() {
  printf '[campaign]\nname = "scale"\n[case]\nplatform = "host"\n[axes]\nvariant = ["mesh"]\np = [2]\n'
  printf 'count = [%s]\n' "$(seq -s, 1 "$1")"
  printf 'stacks = ["trivial"]\n[rounds]\nwarmup = 0\ntimed = 1\n[devices]\nkind = "npu"\nids = "0-1"\n'
  printf '[stacks.trivial]\ncommand = ["%s"]\nresource = "none"\n' "$2"
}

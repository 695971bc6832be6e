#!/bin/sh
# The makespan benchmark's stack: sleeps a time known from the count ($1), times the scale $2
# (default 1), then one sample.
case "$1" in
  256) t=0.2 ;; 4096) t=0.4 ;; 16384) t=0.6 ;; 65536) t=0.8 ;; 262144) t=1.0 ;; *) t=1.2 ;;
esac
[ "${2:-1}" = 1 ] || t=$(awk -v t="$t" -v s="$2" 'BEGIN { printf "%g", t * s }')
sleep "$t"
echo "CAMPAIGN_SAMPLE {\"phase\":\"timed\",\"execute_s\":$t,\"ok\":true}"
echo 'CAMPAIGN_DONE {"correctness":"pass"}'

#!/bin/sh
# The stack of the report benchmark (benches/report_scale.sh): one process prints every round
# of a run at once — $CAMPAIGN_WARMUP warmup and $CAMPAIGN_TIMED timed samples whose times follow
# an alpha-beta cost of the case (count $1 fp32 elements over p $2 ranks) scaled by the stack's
# factor $3, with a few percent of noise and a rare outlier. Deterministic per (count, p, factor),
# so two run dirs made by the same plan hold the same numbers.
exec awk -v count="$1" -v p="$2" -v f="$3" -v w="${CAMPAIGN_WARMUP:-1}" -v t="${CAMPAIGN_TIMED:-50}" 'BEGIN {
  srand(count * 7 + p * 131 + int(f * 1000));
  steps = 0; for (q = p; q > 1; q /= 2) steps++;
  base = f * (2e-5 * steps + 8.0 * count * (p - 1) / p / 1.2e10);
  for (i = 1; i <= w + t; i++) {
    x = base * (1 + 0.04 * rand() - 0.02 + (rand() < 0.02 ? 0.5 * rand() : 0));
    if (i <= w) x *= 3;
    printf "CAMPAIGN_SAMPLE {\"phase\":\"%s\",\"execute_s\":%.9g,\"wall_s\":%.9g,\"ok\":true}\n",
      (i <= w ? "warmup" : "timed"), x, x * 1.1 + 2e-6;
  }
  print "CAMPAIGN_DONE {\"correctness\":\"pass\"}";
}'

#!/bin/sh
# The trivial stack of the engine-overhead benchmark: one timed sample, done.
echo 'CAMPAIGN_SAMPLE {"phase":"timed","execute_s":0.000001,"ok":true}'
echo 'CAMPAIGN_DONE {"correctness":"pass"}'

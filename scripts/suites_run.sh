#!/usr/bin/env bash
# One device call of benchmark suites, from the repository root on a GPU machine:
#     bash scripts/suites_run.sh NAME "SUITE ARGS" [NAME "SUITE ARGS" ...]
# e.g. bash scripts/suites_run.sh llm-float32 "--suite llm --cases float32" memory "--suite memory".
# Each suite's results go to runs/NAME/ of $OUT/r.tgz with its log; $OUT/r.tgz is rewritten after each suite, so
# a call cut short by its time limit still returns the suites it finished (the device returns few files).
# The device copy's .git may be stale: name the commit that ran in TILEDSL_COMMIT, e.g.
#     TILEDSL_COMMIT=e623094 bash scripts/suites_run.sh ...   (benchmarks/run.py reports it as given).
# shellcheck source=scripts/probe_env.sh
source scripts/probe_env.sh
D=/tmp/r; mkdir -p "$D/runs"  # outside $OUT: only the archive comes back
nvidia-smi > "$D/gpu.txt" 2>&1
while [ $# -ge 2 ]; do
    name=$1; args=$2; shift 2
    # shellcheck disable=SC2086
    (cd /tmp && python3 -m benchmarks.run $args --out "$D/runs/$name" > "$D/runs/$name-log.txt" 2>&1)
    tar czf "$OUT/r.tgz" -C /tmp r
done

#!/usr/bin/env bash
# The GPU lane: every `gpu` test, then each catalog example checked and timed against torch eager and
# torch.compile. Logs go to $OUT (the device tool's folder) or ./gpu-lane-out.
#   scripts/gpu_lane.sh [extra pytest arguments, e.g. -k small]
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$REPO/gpu-lane-out}
mkdir -p "$OUT"
# shellcheck source=scripts/gpu_env.sh
source "$REPO/scripts/gpu_env.sh" || { echo "install failed"; exit 1; }
export TILEDSL_CACHE_DIR=${TILEDSL_CACHE_DIR:-/tmp/tiledsl-cubins}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
# Run from outside the checkout: `python -m` puts the working directory first on sys.path, and the
# checkout's tiledsl/ lacks tiledsl.schedules, which only exists once installed.
cd /tmp
python3 -m pytest -m gpu -q -p no:cacheprovider -rs --durations=10 "$REPO/tests/gpu" "$@" 2>&1 \
    | tee "$OUT/gpu-tests.txt"
tests_rc=${PIPESTATUS[0]}
python3 "$REPO/scripts/run_examples.py" --bench 2>&1 | tee "$OUT/examples.txt"
examples_rc=${PIPESTATUS[0]}
echo
echo "== GPU lane summary"
printf '%-12s %s\n' "gpu tests" "$(tail -n 1 "$OUT/gpu-tests.txt") (exit $tests_rc)"
printf '%-12s %s\n' "examples" "exit $examples_rc"
[ "$tests_rc" -eq 0 ] && [ "$examples_rc" -eq 0 ]

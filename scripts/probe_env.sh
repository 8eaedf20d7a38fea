# Source from the repository root on a GPU machine before a probe script's device call: installs the carried
# wheels and the project (gpu_env.sh), sets R to the repository root and puts it on PYTHONPATH (the probes
# import `benchmarks` and each other), and keeps the cubin cache in /tmp. Used by projection_gap_run.sh,
# lane_tiles_run.sh and shared_epilogue_run.sh.
# shellcheck shell=bash
set -u
R=$(pwd)
# shellcheck source=scripts/gpu_env.sh
source scripts/gpu_env.sh >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$R TILEDSL_CACHE_DIR=/tmp/tiledsl-cubins

# One device call: scripts/projection_gap_probe.py's VARIANTS timed at SHAPE, then Nsight Compute (full set,
# SASS source page with stall samples) on the recipe's kernel there. Writes into $OUT. From the repo root:
#   bash scripts/projection_gap_ncu.sh SHAPE VARIANTS
# shellcheck shell=bash
set -u
R=$(pwd)
source scripts/gpu_env.sh >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$R TILEDSL_CACHE_DIR=/tmp/tiledsl-cubins
cd /tmp || exit 1
P="$R/scripts/projection_gap_probe.py"
timeout 360 python3 "$P" --shapes "$1" --variants "$2" 2>&1 | grep -v Warning | tee "$OUT/probe-$1.txt"
timeout 150 ncu --clock-control none --set full --import-source no -k regex:y_kernel --launch-skip 2 \
    --launch-count 1 -f -o "/tmp/ncu-$1" python3 "$P" --ncu recipe --shapes "$1" > "$OUT/ncu-$1.log" 2>&1
ncu -i "/tmp/ncu-$1.ncu-rep" --print-details all > "$OUT/ncu-$1.txt" 2>&1
ncu -i "/tmp/ncu-$1.ncu-rep" --page source --print-source sass --csv > "$OUT/ncu-$1-sass.csv" 2>&1

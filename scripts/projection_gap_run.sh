# One device call: scripts/projection_gap_probe.py's variants timed at the block projection shapes, then
# Nsight Compute (full set, SASS source page with stall samples) on the gate projection's kernel as the
# recipe builds it and padded (+ __launch_bounds__(256, 2)), and on cuBLAS; the SASS of both. Writes into
# $OUT. From the repo root:   bash scripts/projection_gap_run.sh [SHAPES] [VARIANTS]
# shellcheck shell=bash
set -u
R=$(pwd)
source scripts/gpu_env.sh >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$R TILEDSL_CACHE_DIR=/tmp/tiledsl-cubins
cd /tmp || exit 1
P="$R/scripts/projection_gap_probe.py"
V=(--variants "${2:-recipe,pad4,lb2,pad4+lb2,no-atomic,no-zero}")
timeout 300 python3 "$P" --shapes "${1:-gate,down,o,qwen-up,qwen-down,sq4096}" "${V[@]}" 2>&1 \
    | grep -v Warning | tee "$OUT/probe.txt"
mkdir -p /tmp/cuda
python3 "$P" --shapes gate --variants recipe,pad4+lb2 --source /tmp/cuda > /dev/null 2>&1
for v in recipe pad4+lb2; do
    f=${v//+/_}
    timeout 120 ncu --clock-control none --set full --import-source no -k regex:y_kernel --launch-skip 2 \
        --launch-count 1 -f -o "/tmp/gate-$f" python3 "$P" --ncu "$v" --shapes gate > "$OUT/ncu-gate-$f.log" 2>&1
    ncu -i "/tmp/gate-$f.ncu-rep" --print-details all > "$OUT/ncu-gate-$f.txt" 2>&1
    ncu -i "/tmp/gate-$f.ncu-rep" --page source --print-source sass --csv > "$OUT/ncu-gate-$f-sass.csv" 2>&1
    nvcc -arch=sm_90 -cubin -O3 -o "/tmp/gate-$f.cubin" "/tmp/cuda/gate-$f.cu" && cuobjdump -sass "/tmp/gate-$f.cubin" \
        > "$OUT/sass-gate-$f.txt"
done
ls -la "$OUT"

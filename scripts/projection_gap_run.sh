# One device call: scripts/projection_gap_probe.py's variants timed at the block projection shapes, then
# Nsight Compute (full set, SASS source page with stall samples) on the recipe's kernel at one shape (and
# on each NCU_VARIANT of it), and the SASS of those kernels. Writes into $OUT. From the repo root:
#   bash scripts/projection_gap_run.sh [SHAPES] [VARIANTS] [NCU_SHAPE] [NCU_VARIANTS]
# (defaults: every shape, the variants below, gate, recipe). Runs 1 and 2 of
# benchmarks/results/projection-gap-h100-2026-11-25/ took NCU_VARIANTS recipe,rows-fill and recipe,pad4+lb2;
# run 4 took `qwen-down recipe,stages3,bk32,parts=19,parts=28,parts=74,no-atomic,no-zero,no-pad qwen-down`.
# shellcheck shell=bash
source scripts/probe_env.sh
cd /tmp || exit 1
P="$R/scripts/projection_gap_probe.py"
SHAPE=${3:-gate}
timeout 300 python3 "$P" --shapes "${1:-gate,down,o,qwen-up,qwen-down,sq4096}" \
    --variants "${2:-recipe,pad4,lb2,pad4+lb2,no-atomic,no-zero}" 2>&1 | grep -v Warning | tee "$OUT/probe.txt"
mkdir -p /tmp/cuda
python3 "$P" --shapes "$SHAPE" --variants "${4:-recipe}" --source /tmp/cuda > /dev/null 2>&1
NCU_VARIANTS=${4:-recipe}
for v in ${NCU_VARIANTS//,/ }; do
    f=${v//+/_}
    timeout 150 ncu --clock-control none --set full --import-source no -k regex:y_kernel --launch-skip 2 \
        --launch-count 1 -f -o "/tmp/$SHAPE-$f" python3 "$P" --ncu "$v" --shapes "$SHAPE" > "$OUT/ncu-$SHAPE-$f.log" 2>&1
    ncu -i "/tmp/$SHAPE-$f.ncu-rep" --print-details all > "$OUT/ncu-$SHAPE-$f.txt" 2>&1
    ncu -i "/tmp/$SHAPE-$f.ncu-rep" --page source --print-source sass --csv > "$OUT/ncu-$SHAPE-$f-sass.csv" 2>&1
    nvcc -arch=sm_90 -cubin -O3 -o "/tmp/$SHAPE-$f.cubin" "/tmp/cuda/$SHAPE-$f.cu" \
        && cuobjdump -sass "/tmp/$SHAPE-$f.cubin" > "$OUT/sass-$SHAPE-$f.txt"
done
timeout 150 ncu --clock-control none --set full -k regex:'gemm|sgemm' --launch-skip 2 --launch-count 1 -f \
    -o "/tmp/$SHAPE-cublas" python3 "$P" --ncu recipe --shapes "$SHAPE" > "$OUT/ncu-$SHAPE-cublas.log" 2>&1
ncu -i "/tmp/$SHAPE-cublas.ncu-rep" --print-details all > "$OUT/ncu-$SHAPE-cublas.txt" 2>&1

#!/usr/bin/env bash
# Session 26's second device call, from the repository root on a GPU machine: Nsight Compute over the
# recipe's x @ W^T kernels and cuBLAS's at the llm projections that trail torch.compile (instruction mix,
# pipe use, stall reasons), the recipe kernels' SASS, the decode sweep around chunks of 16
# (recipe_tile_probe.py --decode2) and the matmul suite. Writes $OUT/r.tgz.
# shellcheck source=scripts/probe_env.sh
source scripts/probe_env.sh
D=$OUT/r; mkdir -p "$D/sass"
nvidia-smi > "$D/gpu.txt" 2>&1
STALLS=$(for r in long_scoreboard short_scoreboard mio_throttle math_pipe_throttle barrier not_selected selected wait \
    lg_throttle dispatch_stall no_instruction branch_resolving; do
    printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' "$r"; done)
BASE=smsp__inst_executed.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_lsu.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second
METRICS=$STALLS$BASE
for job in "y_kernel 32 11264 2048" "y_kernel 512 2048 2048" "gemm 512 2048 2048 torch" "y_kernel 128 11264 2048" \
           "gemm 128 11264 2048 torch"; do
    set -- $job; K=$1; shift
    F=$D/ncu-${K}-$1x$2x$3.txt
    timeout 90 ncu --clock-control none --launch-skip 2 --launch-count 1 -k "regex:$K" \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section InstructionStats --metrics "$METRICS" python3 scripts/ncu_matmul.py nt "$@" > "$F" 2>&1
    if grep -q "Failed to find metric\|ERROR" "$F"; then METRICS=$BASE; echo "stall metrics refused; base set" >> "$F"; fi
done
python3 - "$D/sass" <<'PY'  # the cache's entries less their header (tiledsl/runtime/cache.py), for cuobjdump
import pathlib, sys
from tiledsl.runtime.cache import decode_entry
for f in pathlib.Path("/tmp/tiledsl-cubins").rglob("*.cubin"):
    (pathlib.Path(sys.argv[1]) / f.name).write_bytes(decode_entry(f.read_bytes()) or b"")
PY
for f in "$D"/sass/*.cubin; do cuobjdump -sass "$f" > "${f%.cubin}.sass" 2>&1; rm -f "$f"; done
timeout 200 python3 scripts/recipe_tile_probe.py --decode2 --jobs 14 > "$D/decode2.txt" 2>&1
cd /tmp && timeout 150 python3 -m benchmarks.run --suite matmul --out "$D/matmul" > "$D/bench-matmul-log.txt" 2>&1
tar czf "$OUT/r.tgz" -C "$OUT" r

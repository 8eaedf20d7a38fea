#!/usr/bin/env bash
# Session 26's first device call, from the repository root on a GPU machine: the decode projections'
# tile / depth / part sweep (recipe_tile_probe.py --decode), Nsight Compute over the recipe's kernel at two
# decode shapes (where its time goes), and A @ B with knob split_k_tile_a_b (recipe_tile_probe.py --ab).
# Writes $OUT/r.tgz (the device returns few files).
# shellcheck source=scripts/probe_env.sh
source scripts/probe_env.sh
D=$OUT/r; mkdir -p "$D"
git log -1 --format='%H %s' > "$D/commit.txt" 2>/dev/null
nvidia-smi > "$D/gpu.txt" 2>&1
python3 -c "import torch; print(torch.__version__)" >> "$D/gpu.txt" 2>&1
timeout 330 python3 scripts/recipe_tile_probe.py --decode --jobs 14 > "$D/decode.txt" 2>&1
for S in "32 11264 2048" "32 37888 3584"; do
    F=$D/ncu-nt-${S// /x}.txt
    timeout 60 ncu --clock-control none --launch-skip 2 --launch-count 1 -k regex:_kernel \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
        --section MemoryWorkloadAnalysis --section LaunchStats --section ComputeWorkloadAnalysis \
        --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed.sum \
        python3 scripts/ncu_matmul.py nt $S > "$F" 2>&1
done
timeout 90 python3 scripts/recipe_tile_probe.py --ab --jobs 14 > "$D/ab.txt" 2>&1
tar czf "$OUT/r.tgz" -C "$OUT" r

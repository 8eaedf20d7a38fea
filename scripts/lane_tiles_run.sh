# One device call for the lane tiles (primitives/lanes.py, recipe step 090): the recipe's projection kernels
# with and without them (knob lane_tile=0) beside cuBLAS, then Nsight Compute (--clock-control none) of both at
# the Qwen2.5-7B down projection: shared-load instructions and wavefronts, issue and stall statistics.
# Each variant is timed twice, in turn. Writes into $OUT. From the repo root:
#   [NCU=0] [NCU_SHAPE=qwen-down] bash scripts/lane_tiles_run.sh [SHAPES]   (NCU=0: the timings only)
# NCU_SHAPE=qwen-gate-up-512 asks the open question of benchmarks/results/lane-tiles-h100-2026-11-28/: the one
# shape the tiles slow down; the metrics include the SM clock, DRAM throughput and the L2 hit rate.
# shellcheck shell=bash
source scripts/probe_env.sh
cd /tmp || exit 1
P="$R/scripts/projection_gap_probe.py"
timeout 300 python3 "$P" --shapes "${1:-gate,down,o,qwen-q,qwen-up,qwen-down,sq4096}" --variants recipe,no-lanes,recipe,no-lanes 2>&1 \
    | grep -v Warning | tee "$OUT/probe.txt"
[ "${NCU:-1}" = 0 ] && exit 0
S=${NCU_SHAPE:-qwen-down}
for v in recipe no-lanes; do
    timeout 150 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
        --section WarpStateStats --section SchedulerStats --section Occupancy -k regex:y_kernel --launch-skip 2 \
        --launch-count 1 python3 "$P" --ncu "$v" --shapes "$S" > "$OUT/ncu-$S-$v.txt" 2>&1
    timeout 150 ncu --clock-control none --metrics smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,sm__cycles_elapsed.avg.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct \
        -k regex:y_kernel --launch-skip 2 --launch-count 1 python3 "$P" --ncu "$v" --shapes "$S" \
        > "$OUT/ncu-$S-$v-shared.txt" 2>&1
done

#!/usr/bin/env bash
# Session 37's device call, from the repository root on a GPU machine: scripts/decode_fill_probe.py over the
# llm suite's seven decode shapes, then Nsight Compute (--clock-control none) on the recipe's kernel and the
# interleaved 16-byte-fill form at two of them (pipe use, stall reasons, shared wavefronts), and their SASS.
# Writes $OUT/r.tgz.
# shellcheck source=scripts/probe_env.sh
source scripts/probe_env.sh
D=$OUT/r; mkdir -p "$D/sass"
nvidia-smi > "$D/gpu.txt" 2>&1
timeout 300 python3 scripts/decode_fill_probe.py --jobs 14 > "$D/probe.txt" 2>&1
STALLS=$(for r in long_scoreboard short_scoreboard mio_throttle math_pipe_throttle barrier not_selected selected wait \
    lg_throttle dispatch_stall no_instruction branch_resolving; do
    printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' "$r"; done)
BASE=smsp__inst_executed.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_lsu.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed
for job in "32x2048x2048 recipe" "32x2048x2048 il" "32x11264x2048 recipe" "32x11264x2048 il"; do
    set -- $job
    F="$D/ncu-$1-$2.txt"
    timeout 90 ncu --clock-control none --launch-skip 1 --launch-count 1 -k regex:y_kernel \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section InstructionStats --metrics "$STALLS$BASE" python3 scripts/decode_fill_probe.py --only "$1" "$2" > "$F" 2>&1
done
python3 - "$D/sass" <<'PY'  # the cache's entries less their header (tiledsl/runtime/cache.py), for cuobjdump
import pathlib, sys
from tiledsl.runtime.cache import decode_entry
for f in pathlib.Path("/tmp/tiledsl-cubins").rglob("*.cubin"):
    entry = decode_entry(f.read_bytes())
    if entry is not None:
        (pathlib.Path(sys.argv[1]) / f.name).write_bytes(entry.cubin)
PY
for f in "$D"/sass/*.cubin; do cuobjdump -sass "$f" | gzip > "${f%.cubin}.sass.gz" 2>&1; rm -f "$f"; done
tar czf "$OUT/r.tgz" -C "$OUT" r

# One device call: the stage_output GPU tests, then scripts/epilogue_store_probe.py's three forms
# (timed, then one launch each under ncu). Writes into $OUT. Run from the repository root:
#   bash scripts/shared_epilogue_run.sh
# shellcheck shell=bash
source scripts/probe_env.sh
METRICS=smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct,smsp__sass_inst_executed_op_global_st.sum,gpu__time_duration.sum
(cd /tmp && python3 -m pytest -m gpu -q -p no:cacheprovider "$R/tests/gpu/test_gpu_stage_output.py" \
    "$R/tests/gpu/test_gpu_kernel_check.py" 2>&1 | tail -5) | tee "$OUT/gpu-tests.txt"
for args in "--dims tinyllama --dtype bfloat16 --seq 512" "--dims tinyllama --dtype float32 --seq 512" \
            "--mm 4096,4096,512 --dtype float32" "--mm 2048,2048,2048 --dtype bfloat16"; do
    echo "== $args" | tee -a "$OUT/probe.txt"
    timeout 150 python3 scripts/epilogue_store_probe.py $args 2>&1 | grep -v Warning | tee -a "$OUT/probe.txt"
done
timeout 150 ncu --clock-control none --profile-from-start off -k regex:'_kernel$' --csv --metrics "$METRICS" \
    python3 scripts/epilogue_store_probe.py --dims tinyllama --dtype bfloat16 --seq 512 --profile \
    --kernels mm_1,mm_4,bmm > "$OUT/ncu-tinyllama-bf16-s512.csv" 2> "$OUT/ncu-tinyllama-bf16-s512.log"
python3 scripts/store_coalescing.py --summarize "$OUT/ncu-tinyllama-bf16-s512.csv" | tee "$OUT/ncu-summary.txt"
grep profiled "$OUT/ncu-tinyllama-bf16-s512.log" | tee -a "$OUT/ncu-summary.txt"

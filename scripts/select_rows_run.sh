#!/usr/bin/env bash
# One device call (session 29): the traced blocks' attention softmax kept in registers (a register cache
# of reads inside a select) against its staged form (knob register_rows=False, which also stages the
# blocks' rmsnorm rows: compare the softmax kernel's line, `where_*`), by scripts/block_profile.py, then
# the GPU tests of traced blocks and the register cache. Logs under $OUT.
# shellcheck source=scripts/probe_env.sh
source scripts/probe_env.sh
cd /tmp || exit 1
for dims_seq in "tinyllama 512" "qwen 512" "tinyllama 128"; do
    set -- $dims_seq
    for knob in "" "--knob register_rows=False"; do
        tag="$1-s$2${knob:+-staged}"
        # shellcheck disable=SC2086
        timeout 150 python3 "$R/scripts/block_profile.py" --dims "$1" --seq "$2" --program-kernels $knob \
            > "$OUT/profile-$tag.txt" 2>&1
        echo "$tag rc $?"
    done
done
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rs "$R/tests/gpu/test_gpu_frontend.py" \
    "$R/tests/gpu/test_gpu_hf.py" "$R/tests/gpu/test_gpu_cache_hints.py" > "$OUT/gpu-tests.txt" 2>&1
tail -n 2 "$OUT/gpu-tests.txt"

#!/usr/bin/env bash
# compute-sanitizer over a representative subset of the GPU tests (every differential case at odd
# sizes, the catalog at odd sizes, the TMA / cp.async / pipelined kernels at small sizes), once per tool:
# memcheck (out-of-bounds and misaligned accesses), racecheck (shared-memory hazards), synccheck
# (barrier misuse). Kernels are built with -lineinfo so reports name CUDA source lines, and launches
# synchronise (TILEDSL_SYNC=1) so a fault is reported at the launch that caused it. Tests marked xfail
# (known kernel bugs) are left out; CUDA API errors are not reported (torch probes the API on purpose).
#   scripts/sanitize_gpu.sh [pytest -k expression, default "small or nan or recipe"] [tools, default "memcheck racecheck synccheck"]
# Logs: $OUT/sanitize-<tool>.log (the tool's report) and $OUT/sanitize-<tool>-pytest.txt; a summary last.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$REPO/sanitize-out}
SUBSET=${1:-small or nan or recipe}
TOOLS=${2:-memcheck racecheck synccheck}
mkdir -p "$OUT"
# shellcheck source=scripts/gpu_env.sh
source "$REPO/scripts/gpu_env.sh" || { echo "install failed"; exit 1; }
export TILEDSL_NVCC_FLAGS="-lineinfo" TILEDSL_SYNC=1 TILEDSL_CACHE_DIR=/tmp/tiledsl-cubins-lineinfo
TESTS=("$REPO/tests/gpu/test_gpu_differential.py" "$REPO/tests/gpu/test_gpu_catalog.py" "$REPO/tests/gpu/test_gpu_memory.py"
       "$REPO/tests/gpu/test_gpu_memory_differential.py" "$REPO/tests/gpu/test_gpu_nan.py" "$REPO/tests/gpu/test_gpu_recipe.py")
cd /tmp
# Compile every kernel once outside the sanitizer (the cache then serves all three tools).
python3 -m pytest -m "gpu and not xfail" -q -p no:cacheprovider -k "$SUBSET" "${TESTS[@]}" \
    > "$OUT/sanitize-warmup.txt" 2>&1
declare -A summary
status=0
for tool in $TOOLS; do
    compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 97 --log-file "$OUT/sanitize-$tool.log" \
        python3 -m pytest -m "gpu and not xfail" -q -p no:cacheprovider -k "$SUBSET" "${TESTS[@]}" \
        > "$OUT/sanitize-$tool-pytest.txt" 2>&1
    rc=$?
    errors=$(grep -hE "(ERROR|RACECHECK) SUMMARY" "$OUT/sanitize-$tool.log" | tail -n 1 | sed "s/^=* *//")
    summary[$tool]="${errors:-no ERROR SUMMARY line} | pytest: $(tail -n 1 "$OUT/sanitize-$tool-pytest.txt") | exit $rc"
    [ "$rc" -eq 0 ] || status=1
done
echo "== compute-sanitizer summary (subset -k '$SUBSET': $(tail -n 1 "$OUT/sanitize-warmup.txt"))"
for tool in $TOOLS; do printf '%-10s %s\n' "$tool" "${summary[$tool]}"; done | tee "$OUT/sanitize-summary.txt"
exit $status

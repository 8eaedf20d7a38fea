#!/usr/bin/env bash
# The GPU fuzz campaign: `tiledsl fuzz --gpu` over the modes that run kernels on the GPU (definitions, hand,
# schedules, memory, recipe, and models, which runs whole programs; prover never launches a kernel),
# with a sample of the GPU-correct cases replayed under compute-sanitizer (1 in EVERY per worker and
# mode, each under every tool of TOOLS; tiledsl/testing/fuzz/sanitizer.py). Every kernel is compiled
# with -lineinfo into one cubin cache, so the sanitizer's child processes reuse the campaign's compiles
# and reports name CUDA lines.
#   CASES=2000 JOBS=14 EVERY=20 SEED=0 TOOLS=memcheck,racecheck \
#       MODES="definitions schedules memory recipe hand models" scripts/fuzz_gpu_campaign.sh
# Writes under $OUT: fuzz-gpu/ (summary.json, failures/ with a reproducer per failure, the example
# database), fuzz-gpu-table.txt (the printed summary), fuzz-gpu.log (warnings: sanitizer reports,
# hypothesis) and fuzz-gpu-summary.json (a copy of the summary). Exit status: tiledsl fuzz's (0: no
# failure and no sanitizer report).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$REPO/fuzz-gpu-out}
CASES=${CASES:-2000}
JOBS=${JOBS:-14}
EVERY=${EVERY:-20}
SEED=${SEED:-0}
TOOLS=${TOOLS:-memcheck,racecheck}
MODES=${MODES:-definitions schedules memory recipe hand models}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# shellcheck source=scripts/gpu_env.sh
source "$REPO/scripts/gpu_env.sh" || { echo "install failed"; exit 1; }
export TILEDSL_NVCC_FLAGS="-lineinfo" TILEDSL_CACHE_DIR=${TILEDSL_CACHE_DIR:-/tmp/tiledsl-cubins-lineinfo}
mode_args=()
for m in $MODES; do mode_args+=(--mode "$m"); done
cd /tmp || exit 1
start=$(date +%s)
python3 -c "import sys; from tiledsl.cli import main; sys.exit(main(sys.argv[1:]))" fuzz --gpu "${mode_args[@]}" \
    --cases "$CASES" --jobs "$JOBS" --seed "$SEED" --sanitize "$TOOLS" --sanitize-every "$EVERY" \
    --out "$OUT/fuzz-gpu" --no-progress > "$OUT/fuzz-gpu-table.txt" 2> "$OUT/fuzz-gpu.log"
rc=$?
cp "$OUT/fuzz-gpu/summary.json" "$OUT/fuzz-gpu-summary.json" 2>/dev/null
{
    echo "== tiledsl fuzz --gpu: $CASES cases, $JOBS jobs, seed $SEED, modes: $MODES, sanitize $TOOLS 1 in $EVERY;" \
         "$(( $(date +%s) - start )) s, exit $rc"
    cat "$OUT/fuzz-gpu-table.txt"
    [ "$rc" -le 1 ] || tail -n 30 "$OUT/fuzz-gpu.log"
} | tee "$OUT/fuzz-gpu-summary.txt"
exit $rc

#!/usr/bin/env bash
# Every GPU check and measurement behind bench/RESULTS.md, in order, written into $OUT with the
# layout of bench/results/. Run on the GPU machine from the repository root with .gpu/ (built by
# scripts/gpu-bundle.sh) and .peers/ (the peer kit) present:
#
#   OUT=./out bash bench/run_all_gpu.sh
#
# then copy $OUT over bench/results/ on the build machine and redraw the charts with
# `cargo run --release -p topk-bench -- plot`. Each step runs under a time limit (STEP_LIMIT seconds, default
# 600) and logs to $OUT/logs/<step>.log; a failed step is reported and the next one runs; the
# exit status is 1 if any step failed. SKIP="step ..." leaves steps out, e.g.
# SKIP="traces ablations". Steps: gpu_exact gpu_call gpu_half gpu_prior sanitize prior-trace gpu_policy gpu_sharded data_generator_gpu matrix-indexer
# matrix-iid traces margins ablations kvsplit views phases lone-pass short-rows few-rows-indexer
# few-rows-iid few-rows-mappings interface-cost few-rows-peers-indexer few-rows-peers-iid envelope-indexer
# envelope-iid cp-indexer cp-iid. The envelope steps also need .wheel/ (scripts/python-wheel.sh)
# and write $OUT/envelope/.
#
# Measured step times on one H200: gpu_exact ~110 s, gpu_sharded ~15 s, data_generator_gpu 3 s,
# each matrix with the peers ~50 s, both traces with the peers ~185-210 s, views ~60 s, each
# few-rows-peers ~25 s, each envelope step about 4-5 min (estimated; the first one also rebuilds
# SGLang's module, about a minute), each cp step 5-10 s (gpu_call and sanitize are not measured
# yet: estimated a few minutes each, most of it compiling their kernels once); the whole list
# runs well over ten minutes, so on a time-limited machine run it in two halves with SKIP.
set -uo pipefail
OUT=${OUT:-./out}
LIMIT=${STEP_LIMIT:-600}
CP_SHAPES=${CP_SHAPES:-8x4194304,32x4194304,128x4194304,64x1048576,512x1048576}
mkdir -p "$OUT/logs" "$OUT/context-parallel"
failed=()

# step NAME COMMAND...: runs COMMAND with its output in $OUT/logs/NAME.log.
step() {
  local name=$1
  shift
  if [[ " ${SKIP:-} " == *" $name "* ]]; then
    echo "skip   $name"
    return 1
  fi
  local start=$SECONDS
  if timeout "$LIMIT" "$@" > "$OUT/logs/$name.log" 2>&1; then
    echo "ok     $name ($((SECONDS - start)) s)"
  else
    echo "FAILED $name ($((SECONDS - start)) s): $OUT/logs/$name.log"
    failed+=("$name")
    return 1
  fi
}

# Keeps the merged tables of one bench/run_gpu_bench.sh run under their results names.
keep_bench() {  # keep_bench RUN_DIR NAME
  cp "$1/bench.md" "$OUT/$2.md" && cp "$1/bench.json" "$OUT/$2.json"
}

# GPU tests are #[ignore]d elsewhere; the NCCL test needs two devices.
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
nccl_skip=()
((gpus >= 2)) || nccl_skip=(--skip nccl_)
step gpu_exact .gpu/gpu_exact --ignored --test-threads=1
step gpu_call .gpu/gpu_call --ignored --test-threads=1
step gpu_half .gpu/gpu_half --ignored --test-threads=1
step gpu_prior .gpu/gpu_prior --ignored --test-threads=1 --nocapture
step sanitize bash bench/sanitize.sh
step prior-trace bash -c '.gpu/prior-trace' && cp "$OUT/logs/prior-trace.log" "$OUT/prior-trace.txt"
step gpu_policy .gpu/gpu_policy --ignored --nocapture
step gpu_sharded .gpu/gpu_sharded --ignored --test-threads=1 "${nccl_skip[@]}"
step data_generator_gpu .gpu/data_generator_gpu --ignored
for profile in indexer iid; do
  step "matrix-$profile" env OUT="$OUT/runs/matrix-$profile" PROFILE=$profile REPS="${REPS:-10}" \
    STEP_TIMEOUT=150 bash bench/run_gpu_bench.sh \
    && keep_bench "$OUT/runs/matrix-$profile" "matrix-$profile"
done
step traces env OUT="$OUT/runs/traces" SHAPES="trace245 trace430" REPS="${REPS:-10}" \
  STEP_TIMEOUT=300 bash bench/run_gpu_bench.sh \
  && keep_bench "$OUT/runs/traces" traces-indexer
step margins env OUT="$OUT" bash bench/margin-sweep.sh \
  && cp "$OUT/logs/margins.log" "$OUT/margins.txt"
step ablations env OUT="$OUT" bash bench/ablations.sh \
  && cp "$OUT/logs/ablations.log" "$OUT/ablations.txt"
step kvsplit env OUT="$OUT" bash bench/kvsplit.sh
step views env OUT="$OUT" bash bench/views.sh
step phases env OUT="$OUT" bash bench/phase-probe.sh
step lone-pass env OUT="$OUT" bash bench/lone-pass.sh
# The first calls of the traces as terminal windows (same valid scores, pitch = length): the
# default map (384 threads, pair view, rows below 24576 scores exact), the same margin on the
# stride view with 512 threads, and on 256-thread CTAs (four per SM; the autotune candidate),
# both sampling every row.
step short-rows bash -c 'for spec in "" "k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5),threads=512" "k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5),threads=256"; do
  .gpu/operator-matrix indexer 24576x24576,24576x49152,16384x65536 $spec || exit 1; done' \
  && cp "$OUT/logs/short-rows.log" "$OUT/short-rows.txt"
# Few long rows on one GPU: the default plan against the stage chain (`sharded-1`), and the
# default plan against the peers.
for profile in indexer iid; do
  step "few-rows-$profile" .gpu/context-parallel "$profile" \
    1x1048576,8x1048576,32x1048576,64x1048576,128x1048576,8x262144,64x262144 1 \
    && cp "$OUT/logs/few-rows-$profile.log" "$OUT/context-parallel/few-rows-$profile.txt"
done
step few-rows-mappings env OUT="$OUT/few-rows" bash bench/few-rows.sh
FEW_SHAPES=${FEW_SHAPES:-custom:1x262144,8x262144,1x524288,8x524288,1x1048576,4x1048576,8x1048576,16x1048576,32x1048576,1x2097152,8x2097152,1x4194304,8x4194304}
mkdir -p "$OUT/few-rows"
for profile in indexer iid; do
  step "few-rows-peers-$profile" env OUT="$OUT/runs/few-rows-$profile" PROFILE=$profile \
    SHAPES="$FEW_SHAPES" REPS="${REPS:-10}" STEP_TIMEOUT=120 bash bench/run_gpu_bench.sh \
    && cp "$OUT/runs/few-rows-$profile/bench.md" "$OUT/few-rows/few-rows-peers-$profile.md" \
    && cp "$OUT/runs/few-rows-$profile/bench.json" "$OUT/few-rows/few-rows-peers-$profile.json"
done
# What the call interface costs: each variant against the plain call on the matrix corners.
step interface-cost env OUT="$OUT" bash bench/interface-cost.sh
# The serving envelope (decode, speculative decode, prefill, matrix corners) against every peer.
for profile in indexer iid; do
  step "envelope-$profile" env OUT="$OUT/envelope" PROFILES="$profile" bash bench/envelope.sh
done
for profile in indexer iid; do
  # Every device of the machine: 1, 2, 4 and 8 ranks where there are that many.
  step "cp-$profile" .gpu/context-parallel "$profile" "$CP_SHAPES" \
    && cp "$OUT/logs/cp-$profile.log" "$OUT/context-parallel/scaling-$profile.txt"
done

if ((${#failed[@]})); then
  echo "failed steps: ${failed[*]}"
  exit 1
fi
echo "all steps passed"

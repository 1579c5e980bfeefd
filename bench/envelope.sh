#!/usr/bin/env bash
# The serving envelope: ours (the Python package) against SGLang V2 (rebuilt on this GPU), vLLM
# 0.33 (best entry point per call), FlashInfer and torch.topk on decode batches, speculative
# decode, prefill chunks and the operator matrix corners, one process per profile, every output
# checked exact; plus the launch-bound limits (empty kernel, bare read) measured in the same run.
# Run on the GPU machine from the repository root with .wheel/ (scripts/python-wheel.sh), .gpu/
# (scripts/gpu-bundle.sh: gen.cu or the topk CLI) and .peers/ (the peer kit) present:
#
#   OUT=./out bash bench/envelope.sh                      # both profiles, default calls
#   OUT=./out PROFILES=indexer bash bench/envelope.sh     # one profile (fits a 10-minute limit)
#   LIST=1 bash bench/envelope.sh                         # the calls and the estimate, no GPU
#
# Writes into $OUT: envelope-<profile>.json, .md (table + summary line) and .svg (chart) per
# profile, and envelope-logs-<profiles>.tar.gz (driver logs, the SGLang rebuild log, gen.cu). Redraw the
# table and chart from a JSON with `python3 bench/peers/envelope_report.py JSON --md-out ...
# --svg-out ...`.
#
# Settings (environment):
#   PROFILES  [indexer iid]   SET preset: default | quick | full [default]   SEED [0]   K [2048]
#   REPS      timed rounds per entry [15]
#   BUDGET_S  per profile: start no call after this many seconds [300]; the rest are listed
#             as not run
#   PEERS     [topk,sglang,vllm,flashinfer,torch] (topk is ours, vllm all its entry points)
#   Call lists replacing the preset's (comma- or space-separated; `none` leaves a kind out):
#     DECODE_BATCHES DECODE_WIDTHS DECODE_LENGTHS (rand,full)     e.g. DECODE_BATCHES=1,32,256
#     SPEC_NEXT_N SPEC_BATCHES (sequences) SPEC_WIDTHS SPEC_LENGTHS
#     PREFILL (16384x32K,8192x64K) PREFILL_LENGTHS (causal,from1) MATRIX (512x128K,...)
#     TRACES (trace245 trace430; none by default)
#   Any DECODE_* (SPEC_*) variable replaces the preset's decode (spec) grid by the product of
#   the four lists, each missing one being the full list of the benchmark.
#   SGL_TOPK_V2_SO + SGL_BAKED_C8_OCC2 + SGL_BAKED_C16_OCC1: use this SGLang module instead of
#             rebuilding; else the module rebuilt on this GPU by .peers/sgl_rebuild_on_target.sh
#             (about a minute with the host's nvcc), kept in $SGL_CACHE [/tmp/topk-sgl] for the
#             next run on the same machine. If the rebuild fails SGLang is reported unavailable
#             (SGL_ALLOW_PREBUILT=1: compare the kit's prebuilt module, cluster<16> off, instead).
#   KIT [.peers]   PYTHON [python3]   TOPK_SITE [/tmp/topk-site]   GEN_CU (generator source)
#
# Duration on one H200: the default calls are estimated at 3-4 minutes per profile (LIST=1
# prints the estimate), plus about a minute for the SGLang rebuild on a fresh machine.
set -uo pipefail

OUT=${OUT:-./out}
PROFILES=${PROFILES:-indexer iid}
SET=${SET:-default}
SEED=${SEED:-0}
K=${K:-2048}
REPS=${REPS:-15}
BUDGET_S=${BUDGET_S:-300}
PEERS=${PEERS:-topk,sglang,vllm,flashinfer,torch}
KIT=${KIT:-.peers}
PY=${PYTHON:-python3}
SITE=${TOPK_SITE:-/tmp/topk-site}
SGL_CACHE=${SGL_CACHE:-/tmp/topk-sgl}
DRIVER=bench/peers/envelope.py

die() { echo "envelope: error: $*" >&2; exit 2; }
note() { echo "envelope: $*" >&2; }

[ -f "$DRIVER" ] || die "run me from the repository root (no $DRIVER here)"

# Call-list settings -> driver flags (only those set, so the preset fills the rest).
call_flags=(--set "$SET")
for var in DECODE_BATCHES DECODE_WIDTHS DECODE_LENGTHS SPEC_NEXT_N SPEC_BATCHES SPEC_WIDTHS \
           SPEC_LENGTHS PREFILL PREFILL_LENGTHS MATRIX TRACES; do
  if [ -n "${!var+x}" ]; then
    flag=${var,,}
    call_flags+=("--${flag//_/-}" "${!var}")
  fi
done

if [ "${LIST:-0}" = 1 ]; then
  exec "$PY" "$DRIVER" --list --reps "$REPS" --seed "$SEED" "${call_flags[@]}"
fi

mkdir -p "$OUT" || die "cannot create $OUT"
LOGS=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$LOGS"' EXIT
START=$SECONDS

# --- Python environment and the generator source (bench/peers/python_env.sh) --------------
source bench/peers/python_env.sh
python_env "SGLang and FlashInfer"
shopt -s nullglob
generator_source "$LOGS"

# --- SGLang: the module rebuilt on this GPU --------------------------------------------------
if [ -n "${SGL_TOPK_V2_SO:-}" ]; then
  export SGL_BUILD_NOTE="${SGL_BUILD_NOTE:-given by SGL_TOPK_V2_SO}"
  note "SGLang module: $SGL_TOPK_V2_SO (given; constants C8_OCC2=${SGL_BAKED_C8_OCC2:-?} C16_OCC1=${SGL_BAKED_C16_OCC1:-?})"
elif [ -f "$SGL_CACHE/sgl_topk_v2_probed.so" ] && [ -f "$SGL_CACHE/constants" ]; then
  read -r C8 C16 BUILT < "$SGL_CACHE/constants"
  export SGL_TOPK_V2_SO="$SGL_CACHE/sgl_topk_v2_probed.so" SGL_BAKED_C8_OCC2=$C8 SGL_BAKED_C16_OCC1=$C16
  export SGL_BUILD_NOTE="rebuilt on this machine by sgl_rebuild_on_target.sh at $BUILT (reused)"
  note "SGLang module: reused $SGL_TOPK_V2_SO (C8_OCC2=$C8 C16_OCC1=$C16, built $BUILT)"
elif [ -f "$KIT/sgl_rebuild_on_target.sh" ]; then
  note "rebuilding SGLang's module with the constants probed on this GPU (about a minute)"
  t0=$SECONDS
  if PY="$PY" bash "$KIT/sgl_rebuild_on_target.sh" > "$LOGS/sgl-rebuild.log" 2>&1 \
      && line=$(grep -m1 '^probed C8_OCC2=' "$LOGS/sgl-rebuild.log") \
      && [ -f "$KIT/sgl_topk_v2_probed.so" ]; then
    C8=${line#*C8_OCC2=}; C8=${C8%% *}
    C16=${line#*C16_OCC1=}; C16=${C16%% *}
    BUILT=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    mkdir -p "$SGL_CACHE" && cp "$KIT/sgl_topk_v2_probed.so" "$SGL_CACHE/" \
      && echo "$C8 $C16 $BUILT" > "$SGL_CACHE/constants"
    export SGL_TOPK_V2_SO="$SGL_CACHE/sgl_topk_v2_probed.so" SGL_BAKED_C8_OCC2=$C8 SGL_BAKED_C16_OCC1=$C16
    [ -f "$SGL_TOPK_V2_SO" ] || export SGL_TOPK_V2_SO="$(cd "$KIT" && pwd)/sgl_topk_v2_probed.so"
    export SGL_BUILD_NOTE="rebuilt on this machine by sgl_rebuild_on_target.sh at $BUILT"
    note "SGLang rebuilt in $((SECONDS - t0)) s: C8_OCC2=$C8 C16_OCC1=$C16"
  else
    export SGL_BUILD_NOTE="rebuild failed ($((SECONDS - t0)) s): see sgl-rebuild.log in envelope-logs-*.tar.gz"
    note "SGLang rebuild FAILED: $(tail -n 3 "$LOGS/sgl-rebuild.log" | tr '\n' ' ')"
  fi
else
  export SGL_BUILD_NOTE="no sgl_rebuild_on_target.sh in $KIT"
  note "no $KIT/sgl_rebuild_on_target.sh: SGLang cannot be rebuilt"
fi

# --- one process per profile -----------------------------------------------------------------
note "per profile: $("$PY" "$DRIVER" --list --reps "$REPS" --seed "$SEED" "${call_flags[@]}" | tail -n 1 | sed 's/^# //'), budget ${BUDGET_S} s"
failed=()
for profile in $PROFILES; do
  base="$OUT/envelope-$profile"
  log="$LOGS/envelope-$profile.log"
  rm -f "$base.json" "$base.md" "$base.svg"
  t0=$SECONDS
  resume=()
  rc=1
  for attempt in 1 2 3; do
    left=$((BUDGET_S - (SECONDS - t0)))
    ((BUDGET_S == 0 || left > 0)) || break
    ((BUDGET_S == 0)) && left=0
    note "profile $profile: attempt $attempt ($((SECONDS - START)) s so far)"
    "$PY" "$DRIVER" --profile "$profile" --k "$K" --seed "$SEED" --reps "$REPS" \
      --peers "$PEERS" --kit "$KIT" --gen-cu "$LOGS/gen.cu" --budget-s "$left" \
      --json-out "$base.json" --md-out "$base.md" --svg-out "$base.svg" \
      "${call_flags[@]}" "${resume[@]}" < /dev/null >> "$log" 2>&1
    rc=$?
    # 3: the CUDA context was lost; a new process continues after the call that broke it.
    [ "$rc" = 3 ] || break
    note "profile $profile: CUDA context lost (envelope-$profile.log in the logs archive says where); resuming in a new process"
    resume=(--resume)
  done
  tail -n 30 "$log"
  [ -f "$base.md" ] && note "profile $profile: $(grep -m1 '^\*\*' "$base.md" | tr -d '*')"
  if [ "$rc" != 0 ] || [ ! -f "$base.md" ]; then
    failed+=("$profile")
    note "profile $profile: driver exited with $rc"
  fi
  note "profile $profile done in $((SECONDS - t0)) s"
done

tar -czf "$OUT/envelope-logs-${PROFILES// /-}.tar.gz" -C "$LOGS" . || note "could not write the logs archive"
note "all done in $((SECONDS - START)) s; results in $OUT/envelope-*.md"
if ((${#failed[@]})); then
  note "failed profiles: ${failed[*]}"
  exit 1
fi

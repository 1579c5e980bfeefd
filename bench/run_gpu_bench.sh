#!/usr/bin/env bash
# Our selector against the peers (torch.topk, FlashInfer, SGLang) on the same generated scores.
# Run on the GPU machine from the repository root:
#
#   bash bench/run_gpu_bench.sh                       # operator matrix, indexer profile
#   SHAPES="trace245 trace430" PROFILE=iid bash bench/run_gpu_bench.sh
#
# Needs: the prebuilt harness ($BENCH, default .gpu/topk-bench) and CLI ($TOPK, default
# .gpu/topk, for the generator source), the peer kit ($KIT, default .peers:
# fi_topk.so, sgl_topk_v2.so, run_peers.py, the tvm_ffi wheel), python3 with torch, cupy, numpy.
#
# Settings (environment):
#   SHAPES   space-separated sets: matrix | trace245 | trace430 | custom:MxN[,MxN...]  [matrix]
#   PROFILE  generator profile [indexer]      K [2048]      SEED [0]      REPS timed rounds [30]
#   PEERS    comma-separated [torch,flashinfer,sglang]; also vllm (its three entry points, from
#            $KIT/vllm/); each runs in its own process, so a peer that breaks the CUDA context
#            cannot take the others down
#   GEN_CU   generator source to use (default: .gpu/gen.cu when carried, else `$TOPK codegen
#            --generator`)
#   OURS=0   skip our runs (peers only)      CHECK_ONLY=1 stop after the checks
#   TOPK_BENCH_ARGS  extra arguments for every `topk-bench bench` run (e.g. --preset NAME)
#   STEP_TIMEOUT     seconds allowed to one `topk-bench bench` run or one peer process [0: no limit]
#   PYTHON   [python3]
#
# Writes under $OUT (default ./out): gen.cu, gpu.txt, shapes-<set>.tsv, topk/<call>.json and
# .err, peers-<set>-<peer>.json and .log, and the merged bench.json and bench.md.
set -euo pipefail

OUT=${OUT:-./out}
SHAPES=${SHAPES:-matrix}
PROFILE=${PROFILE:-indexer}
K=${K:-2048}
SEED=${SEED:-0}
REPS=${REPS:-30}
PEERS=${PEERS:-torch,flashinfer,sglang}
TOPK=${TOPK:-.gpu/topk}
BENCH=${BENCH:-.gpu/topk-bench}
KIT=${KIT:-.peers}
OURS=${OURS:-1}
STEP_TIMEOUT=${STEP_TIMEOUT:-0}
PY=${PYTHON:-python3}
TOPK_BENCH_ARGS=${TOPK_BENCH_ARGS:-}
HERE=bench/peers

die() { echo "run_gpu_bench: error: $*" >&2; exit 2; }
note() { echo "run_gpu_bench: $*" >&2; }
limited() {  # run "$@" under STEP_TIMEOUT when one is set
    if [ "$STEP_TIMEOUT" != 0 ]; then timeout "$STEP_TIMEOUT" "$@"; else "$@"; fi
}

[ -f "$HERE/peers_bench.py" ] || die "run me from the repository root (no $HERE/peers_bench.py here)"
mkdir -p "$OUT/topk"
START=$SECONDS

# --- checks -------------------------------------------------------------------------------
"$PY" - <<'EOF' || die "python3 needs torch (with a visible GPU), cupy and numpy"
import sys
import torch, cupy, numpy
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")
print(f"python {sys.version.split()[0]} | torch {torch.__version__} (CUDA {torch.version.cuda}) "
      f"| cupy {cupy.__version__} | numpy {numpy.__version__} | {torch.cuda.get_device_name(0)}")
EOF
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
        --format=csv > "$OUT/gpu.txt" 2>&1 || true
fi
if [ "$OURS" = 1 ]; then
    [ -x "$BENCH" ] || die "no executable $BENCH (scripts/gpu-bundle.sh builds it into .gpu/; or set BENCH, or OURS=0)"
fi
case ",$PEERS," in
    *,flashinfer,*|*,sglang,*)
        [ -f "$KIT/run_peers.py" ] || note "no $KIT/run_peers.py: FlashInfer and SGLang will be reported unavailable" ;;
esac

# --- generator source ---------------------------------------------------------------------
if [ -n "${GEN_CU:-}" ]; then
    [ -f "$GEN_CU" ] || die "GEN_CU=$GEN_CU does not exist"
    cp "$GEN_CU" "$OUT/gen.cu"
elif [ -f .gpu/gen.cu ]; then
    cp .gpu/gen.cu "$OUT/gen.cu"
else
    [ -x "$TOPK" ] || die "no generator source: carry .gpu/gen.cu, set GEN_CU, or provide $TOPK"
    "$TOPK" codegen --generator > "$OUT/gen.cu" || die "\`$TOPK codegen --generator\` failed"
fi
grep -q 'topk_generate' "$OUT/gen.cu" \
    || die "$OUT/gen.cu has no topk_generate kernel (is the CLI's --generator implemented?)"
[ "${CHECK_ONLY:-0}" = 1 ] && { note "checks passed"; exit 0; }

# --- runs ---------------------------------------------------------------------------------
failures=0
for set in $SHAPES; do
    tag=${set%%:*}
    shapes_tsv="$OUT/shapes-$tag.tsv"
    "$PY" "$HERE/peers_bench.py" --list-shapes --shapes "$set" --k "$K" > "$shapes_tsv" \
        || die "cannot list the shapes of '$set'"
    note "set $set: $(wc -l < "$shapes_tsv") calls ($((SECONDS - START)) s so far)"

    if [ "$OURS" = 1 ]; then
        while IFS=$'\t' read -r name rows width first_length _row_offset; do
            args=(bench --backend cuda --profile "$PROFILE" --rows "$rows" --width "$width"
                  --k "$K" --seed "$SEED" --json)
            # Trace calls that end before their step's width are not terminal windows.
            if [ "$first_length" != $((width - rows + 1)) ]; then
                args+=(--first-length "$first_length")
            fi
            # shellcheck disable=SC2206
            args+=($TOPK_BENCH_ARGS)
            if limited "$BENCH" "${args[@]}" < /dev/null > "$OUT/topk/$name.json" \
                    2> "$OUT/topk/$name.err"; then
                printf 'ours %-16s %s\n' "$name" "$(tr -d '\n' < "$OUT/topk/$name.json" | cut -c1-160)"
            else
                failures=$((failures + 1))
                printf 'ours %-16s FAILED: %s\n' "$name" "$(tail -n 1 "$OUT/topk/$name.err")"
            fi
        done < "$shapes_tsv"
    fi

    for peer in ${PEERS//,/ }; do
        log="$OUT/peers-$tag-$peer.log"
        note "peers: $peer on $set ($((SECONDS - START)) s so far)"
        set +e
        limited "$PY" "$HERE/peers_bench.py" --shapes "$set" --profile "$PROFILE" --k "$K" \
            --seed "$SEED" --reps "$REPS" --peers "$peer" --kit "$KIT" --gen-cu "$OUT/gen.cu" \
            --json-out "$OUT/peers-$tag-$peer.json" < /dev/null > "$log" 2>&1
        rc=$?
        set -e
        tail -n 40 "$log"
        if [ "$rc" != 0 ]; then
            failures=$((failures + 1))
            note "peers_bench.py for $peer on $set exited with $rc (see $log)"
        fi
    done
done

# --- merge --------------------------------------------------------------------------------
shopt -s nullglob
peer_files=("$OUT"/peers-*.json)
[ ${#peer_files[@]} -gt 0 ] || die "no peers result was written; see $OUT/peers-*.log"
"$PY" "$HERE/merge_results.py" --peers-json "${peer_files[@]}" --topk-dir "$OUT/topk" \
    --json-out "$OUT/bench.json" --md-out "$OUT/bench.md" \
    || die "merging failed"
note "done in $((SECONDS - START)) s; $failures step(s) failed; results in $OUT/bench.md"

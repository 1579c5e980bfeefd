#!/usr/bin/env bash
# 16-bit scores: ours (the Python package) against FlashInfer (the kit's prebuilt module) and
# torch.topk on float16 and bfloat16 scores, with float32 as the reference row, on the corners of
# the operator matrix; every timed output checked exact (bench/peers/sixteen_bit.py says how).
# Run on the GPU machine from the repository root with .wheel/ (scripts/python-wheel.sh), .gpu/
# (scripts/gpu-bundle.sh: gen.cu or the topk CLI) and .peers/ (the peer kit) present:
#
#   OUT=./out bash bench/sixteen-bit.sh
#   LIST=1 bash bench/sixteen-bit.sh          # the entries and their floors, no GPU
#
# Writes into $OUT/sixteen-bit/: sixteen-bit.json (every number, verdict and path taken),
# sixteen-bit.md (the table: floor, medians, time over the floor, ours against each peer,
# exactness; ties at the K-th value per dtype) and sixteen-bit.log (the driver's output).
#
# Settings (environment):
#   SHAPES    [512x131072,2048x262144,512x1048576,4096x262144]   K [2048]   SEED [0]
#   DTYPES    [f16,bf16,f32]   PROFILES [indexer,iid] (generated in float32, then cast)
#   PEERS     [topk,flashinfer,torch]   REPS timed rounds per entry [15]
#   KIT [.peers]   PYTHON [python3]   TOPK_SITE [/tmp/topk-site]   GEN_CU (generator source)
#
# Duration: about 2 minutes for the defaults (24 entries, 3 selectors each; 132 s on an H100
# including the setup), most of it the checks and the first plan of each Selector.
set -uo pipefail

OUT=${OUT:-./out}
SHAPES=${SHAPES:-512x131072,2048x262144,512x1048576,4096x262144}
K=${K:-2048}
SEED=${SEED:-0}
DTYPES=${DTYPES:-f16,bf16,f32}
PROFILES=${PROFILES:-indexer,iid}
PEERS=${PEERS:-topk,flashinfer,torch}
REPS=${REPS:-15}
KIT=${KIT:-.peers}
PY=${PYTHON:-python3}
SITE=${TOPK_SITE:-/tmp/topk-site}
DRIVER=bench/peers/sixteen_bit.py

die() { echo "sixteen-bit: error: $*" >&2; exit 2; }
note() { echo "sixteen-bit: $*" >&2; }

[ -f "$DRIVER" ] || die "run me from the repository root (no $DRIVER here)"
flags=(--shapes "$SHAPES" --k "$K" --seed "$SEED" --dtypes "$DTYPES" --profiles "$PROFILES")

if [ "${LIST:-0}" = 1 ]; then
  exec "$PY" "$DRIVER" --list "${flags[@]}"
fi

DIR="$OUT/sixteen-bit"
mkdir -p "$DIR" || die "cannot create $DIR"
WORK=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$WORK"' EXIT
START=$SECONDS

# --- Python environment and the generator source (bench/peers/python_env.sh) --------------
source bench/peers/python_env.sh
python_env "FlashInfer"
shopt -s nullglob
generator_source "$WORK"

# --- the run ---------------------------------------------------------------------------------
rm -f "$DIR/sixteen-bit.json" "$DIR/sixteen-bit.md"
note "$("$PY" "$DRIVER" --list "${flags[@]}" | tail -n 1 | sed 's/^# //'), $REPS rounds each"
"$PY" "$DRIVER" "${flags[@]}" --peers "$PEERS" --reps "$REPS" --kit "$KIT" \
  --gen-cu "$WORK/gen.cu" --json-out "$DIR/sixteen-bit.json" --md-out "$DIR/sixteen-bit.md" \
  < /dev/null > "$DIR/sixteen-bit.log" 2>&1
rc=$?
tail -n 60 "$DIR/sixteen-bit.log"
note "driver exited with $rc after $((SECONDS - START)) s; results in $DIR/"
[ "$rc" = 0 ] && [ -f "$DIR/sixteen-bit.md" ] || exit 1

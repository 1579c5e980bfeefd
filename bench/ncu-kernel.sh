#!/usr/bin/env bash
# Nsight Compute on one operator-matrix call: the report of one launch of the selector's kernel
# (full set, source attached; the clocks left alone), its details page, its per-instruction SASS
# page as CSV, and bench/ncu_hotspots.py's summary of where the warps stall. Run on the GPU
# machine from the repository root with the bundle of scripts/gpu-bundle.sh in .gpu/:
#
#   OUT=./out bash bench/ncu-kernel.sh indexer 1x262144 [SPEC]
#
# BIN [.gpu/operator-matrix]; KERNEL [regex:topk_] picks the kernel by name; SKIP [4] launches
# of it pass first (compile and warm-up). Writes $OUT/ncu-<shape>.{ncu-rep,log}, -details.txt,
# -sass.csv and -hotspots.txt. Profiled times are not the selector's: caches are flushed and the
# launch is replayed once per metric pass.
set -euo pipefail
OUT=${OUT:-./out}
BIN=${BIN:-.gpu/operator-matrix}
KERNEL=${KERNEL:-regex:topk_}
SKIP=${SKIP:-4}
(($# >= 2)) || { echo "usage: OUT=DIR bash bench/ncu-kernel.sh PROFILE MxN [SPEC]" >&2; exit 2; }
profile=$1 shape=$2 spec=${3:-}
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1) \
  || { echo "ncu-kernel: Nsight Compute (ncu) not found" >&2; exit 2; }
mkdir -p "$OUT"
base="$OUT/ncu-$shape"
"$ncu" --clock-control none --kernel-name "$KERNEL" --launch-skip "$SKIP" --launch-count 1 \
  --set full --import-source yes -f -o "$base" "$BIN" "$profile" "$shape" $spec > "$base.log" 2>&1
"$ncu" -i "$base.ncu-rep" --page details > "$base-details.txt"
"$ncu" -i "$base.ncu-rep" --page source --csv --print-source sass > "$base-sass.csv"
python3 "$(dirname "${BASH_SOURCE[0]}")/ncu_hotspots.py" "$base-sass.csv" | tee "$base-hotspots.txt"

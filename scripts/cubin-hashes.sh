#!/usr/bin/env bash
# Hashes the CUBIN (sm_90a, the runtime's NVRTC options) of every generated kernel: presets,
# the planner's policies and autotune candidates, the context-parallel stages, the phase-probe
# and endpoint-probe builds, the verifier and the data generator. Needs no GPU.
#
#   scripts/cubin-hashes.sh OUT            write this tree's list to OUT
#   scripts/cubin-hashes.sh OUT BASELINE   and compare it with BASELINE (an earlier OUT)
#
# TOPK_CUBIN_HASHES_ONLY=TEXT hashes only the kernels whose label contains TEXT;
# TOPK_CUBIN_HASHES_DUMP=DIR writes each kernel's source and CUBIN there (nvdisasm them to compare).
# A refactoring that must leave the compiled code alone: write BASELINE before it, compare after.
# The comparison fails when a kernel's code hash differs (every ELF section but the debug ones,
# without file offsets);
# a different file hash with the same code hash means only the line table moved (-lineinfo).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[[ $# -ge 1 && $# -le 2 ]] || {
  echo "usage: $0 OUT [BASELINE]" >&2
  exit 2
}
out="$(realpath -m "$1")"
baseline="${2:+$(realpath "$2")}"

lib="$(scripts/install-nvrtc.sh)"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TOPK_CUBIN_HASHES="$out" cargo test -p topk-runtime --test cubin_hashes -- \
  --ignored --nocapture

[[ -n "$baseline" ]] || exit 0
awk '
  /^#/ { next }
  FNR == NR { code[$1] = $2; file[$1] = $3; next }
  {
    seen[$1] = 1
    if (!($1 in code)) { print "new:       " $1; added++; next }
    if (code[$1] != $2) { print "CODE DIFFERS: " $1; differs++ }
    else if (file[$1] != $3) { lines++ }
    same++
  }
  END {
    for (k in code) if (!(k in seen)) { print "gone:      " k; gone++ }
    printf "%d kernels in both: %d with different code, %d with only the line table moved; %d new, %d gone\n",
      same, differs, lines, added, gone
    exit differs > 0
  }
' "$baseline" "$out"

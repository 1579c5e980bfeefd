#!/usr/bin/env bash
# Where a row's time goes: the default persistent kernel built with phase timers
# (topk_codegen::probe; TOPK_PHASE_PROBE=1), one plain launch per shape, per-row proposal,
# certification and refinement times (mean, p50, p90, max microseconds over the rows longer
# than K). Run on the GPU machine from the repository root with the bundle of
# scripts/gpu-bundle.sh in .gpu/. Writes $OUT/phases.jsonl, and every probed row (worker, start,
# phases) of the launches of at most TIMELINE_MAX_ROWS rows (1024; an 8192-row launch's
# timeline is ~3 MB; SHAPES given as MxN only: a named set such as `matrix` writes no timeline)
# to $OUT/timeline.jsonl, which `python3 bench/timeline.py` summarizes
# and draws (SVG charts in $OUT/timeline/): how many workers stream at once and what the last
# worker to end did. The probed build's own timings are not the selector's: use the other
# scripts for latency.
set -euo pipefail
OUT=${OUT:-./out}
BIN=${BIN:-.gpu/operator-matrix}
SHAPES=${SHAPES:-512x131072,8192x131072,512x262144,8192x262144,512x1048576,4096x1048576}
MAX_ROWS=${TIMELINE_MAX_ROWS:-1024}
[[ $MAX_ROWS =~ ^[0-9]+$ ]] || { echo "phase-probe: TIMELINE_MAX_ROWS must be a row count" >&2; exit 2; }
mkdir -p "$OUT"
log="$OUT/phases.jsonl"
timeline="$OUT/timeline.jsonl"
: > "$log"
: > "$timeline"
inexact=0
for profile in ${PROFILES:-indexer iid}; do
  for shape in ${SHAPES//,/ }; do
    rows=${shape%%x*}
    if [[ $rows =~ ^[0-9]+$ ]] && (( rows <= MAX_ROWS )); then
      out=$(TOPK_PHASE_PROBE=1 TOPK_PHASE_TIMELINE="$timeline" "$BIN" "$profile" "$shape" ${SPEC:-})
    else
      out=$(TOPK_PHASE_PROBE=1 "$BIN" "$profile" "$shape" ${SPEC:-})
    fi
    # The probed launches' outputs are verified like any other: name a shape whose were not.
    if grep -q '"exact":false' <<< "$out"; then
      echo "phase-probe: $profile $shape: an inexact output" >&2
      inexact=1
    fi
    grep '^{"phases"' <<< "$out" >> "$log"
  done
done
cat "$log"
if [[ -s $timeline ]]; then python3 bench/timeline.py "$timeline" --svg "$OUT/timeline"; fi
exit "$inexact"

#!/usr/bin/env bash
# Experiment A/B: each variant is LABEL=BINARY[:ENV=VALUE,...] (BINARY under .gpu/), run over
# SHAPES on both profiles in interleaved rounds; prints best-of-rounds ratios to the first
# (bench/ab_summary.py, as bench/ab.sh does).
set -uo pipefail
OUT=${OUT:-./out}; mkdir -p "$OUT"
SHAPES=${SHAPES:?}; VARS=${VARS:?}; ROUNDS=${ROUNDS:-2}
log=$OUT/${NAME:-env-ab}.jsonl; : > "$log"
labels=()
for v in $VARS; do labels+=("${v%%=*}"); done
for round in $(seq "$ROUNDS"); do
  for profile in indexer iid; do
    for v in $VARS; do
      label=${v%%=*}; rest=${v#*=}; bin=${rest%%:*}; envs=""
      [[ $rest == *:* ]] && envs=${rest#*:}
      ( IFS=,; for e in $envs; do export "$e"; done; ".gpu/$bin" "$profile" "$SHAPES" ) | grep '^{' \
        | sed "s/^{/{\"variant\":\"$label\",\"round\":$round,/" >> "$log"
    done
  done
  echo "round $round done ($SECONDS s)"
done
python3 bench/ab_summary.py "$log" "${labels[@]}"

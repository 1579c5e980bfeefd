#!/usr/bin/env bash
# Spec sweep on 256K calls with the matrix harness's data (topk bench, seed 0), run on the GPU
# machine from the repository root with .gpu/ built by scripts/gpu-bundle.sh: OUT=dir bash <this>.
set -u
W=262144
base() { echo "k=2048,map=persistent,threads=512,view=run(2),propose=sampled(stride=$1,rho=$2,rescue=2.5,exact_below=24576)"; }
extra() { # rows tailrho
  case $1 in
    512) [ "$2" = none ] && echo "" || echo ",tail=$2@264" ;;
    1024) [ "$2" = none ] && echo ",stagger=16" || echo ",stagger=16,tail=$2@264" ;;
    2048) echo ",stagger=16" ;;
  esac
}
log=$OUT/sweep.jsonl; : > $log
for round in 1 2; do
for p in indexer iid; do
for M in 512 1024 2048; do
  specs=("")
  specs+=("$(base 64 1.5)$(extra $M 1.75)")
  specs+=("$(base 64 1.6)$(extra $M 1.75)")
  specs+=("$(base 64 1.5)$(extra $M 2)")
  specs+=("$(base 128 1.6)$(extra $M 2)")
  specs+=("$(base 128 1.75)$(extra $M none)")
  if [ $M = 1024 ]; then
    specs+=("$(base 128 1.75),stagger=8,tail=2@264")
    specs+=("$(base 128 1.75),stagger=24,tail=2@264")
  fi
  for s in "${specs[@]}"; do
    args=(bench --backend cuda --profile $p --rows $M --width $W --k 2048 --seed 0 --json)
    [ -n "$s" ] && args+=(--spec "$s")
    r=$(timeout 60 .gpu/topk "${args[@]}" 2>$OUT/err.txt | tr -d '\n')
    echo "{\"round\":$round,\"profile\":\"$p\",\"rows\":$M,\"given\":\"$s\",\"r\":${r:-null}}" >> $log
  done
done; done; echo "round $round $SECONDS s"; done
for s in "" "$(base 64 1.5),tail=1.75@264"; do
  TOPK_PHASE_PROBE=1 timeout 60 .gpu/05-operator-matrix iid 512x262144,1024x262144 $s | grep '"phases"' >> $OUT/phases.jsonl
done
echo "all $SECONDS s"

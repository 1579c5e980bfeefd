#!/usr/bin/env bash
# Tail margin of the last wave on codegen version 16, on the matrix harness's data (topk bench,
# seed 0): the default (rho 2 on the last pool of rows), rho 1.9, and no tail margin, at 512 and
# 1024 rows of 256K, both profiles, two interleaved rounds. Run on the GPU machine from the
# repository root with .gpu/ built by scripts/gpu-bundle.sh: OUT=dir bash <this>.
set -u
W=262144
base="k=2048,map=persistent,threads=512,view=run(2),propose=sampled(stride=128,rho=1.75,rescue=2.5,exact_below=24576)"
log=$OUT/tail-sweep.jsonl; : > "$log"
for round in 1 2; do
for p in indexer iid; do
for M in 512 1024; do
  stag=""; [ $M = 1024 ] && stag=",stagger=16"
  for tail in default 2 1.9 none; do
    s=""
    case $tail in
      default) ;;
      none) s="$base$stag" ;;
      *) s="$base$stag,tail=$tail@264" ;;
    esac
    args=(bench --backend cuda --profile $p --rows $M --width $W --k 2048 --seed 0 --json)
    [ -n "$s" ] && args+=(--spec "$s")
    r=$(timeout 60 .gpu/topk "${args[@]}" 2>>"$OUT/err.txt" | tr -d '\n')
    echo "{\"round\":$round,\"profile\":\"$p\",\"rows\":$M,\"tail\":\"$tail\",\"r\":${r:-null}}" >> "$log"
  done
done; done; echo "round $round $SECONDS s"; done

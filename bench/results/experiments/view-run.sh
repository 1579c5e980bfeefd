#!/usr/bin/env bash
# Proposal time against view sectors: run(2) (default) vs run(4) / run(8) at the same stride;
# GPU machine, repository root, .gpu/ from scripts/gpu-bundle.sh: OUT=dir bash <this>.
set -u
S='k=2048,map=persistent,threads=512,propose=sampled(stride=128,rho=1.75,rescue=2.5,exact_below=24576),tail=2@264'
for p in indexer iid; do
for v in 2 4 8; do
  TOPK_PHASE_PROBE=1 timeout 60 .gpu/05-operator-matrix $p 512x262144,1024x262144,512x1048576,512x131072 "$S,view=run($v)" | grep '"phases"' | sed "s/^{/{\"view\":$v,/" >> $OUT/phases.jsonl
done
for v in 2 4; do
  for M in 512 1024; do
  r=$(timeout 60 .gpu/topk bench --backend cuda --profile $p --rows $M --width 262144 --k 2048 --seed 0 --json --spec "$S,view=run($v)" | tr -d '\n')
  echo "{\"profile\":\"$p\",\"view\":$v,\"rows\":$M,\"r\":$r}" >> $OUT/times.jsonl
  done
done
done
echo "all $SECONDS s"

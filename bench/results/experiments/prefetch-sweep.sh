#!/usr/bin/env bash
# The row stream's L2 prefetch (one batch ahead, every kernel: branch exp/pf1) against codegen
# version 16, beyond the operator matrix: (1) the calls of trace245 with the two CLIs alternating;
# (2) block sizes of 256, 384 and 512 threads, with and without a tail margin, on 512 and 1024
# rows of 256K and 512 rows of 128K; (3) calls the default map runs on 256-thread pools. Run on
# the GPU machine from the repository root with .gpu/topk (main), .gpu/topk-pf1, .gpu/05-main and
# .gpu/05-exp-pf1: OUT=dir bash <this>.
set -u
log=$OUT/prefetch-sweep.jsonl; : > "$log"
python3 bench/peers/peers_bench.py --list-shapes --shapes trace245 --k 2048 > "$OUT/trace245.tsv"
while IFS=$'\t' read -r name rows width first _; do
  for v in topk topk-pf1; do
    args=(bench --backend cuda --profile indexer --rows "$rows" --width "$width" --k 2048 --seed 0 --json)
    [ "$first" != $((width - rows + 1)) ] && args+=(--first-length "$first")
    r=$(timeout 60 ".gpu/$v" "${args[@]}" 2>>"$OUT/err.txt" | tr -d '\n')
    echo "{\"part\":\"trace245\",\"call\":\"$name\",\"variant\":\"$v\",\"r\":${r:-null}}" >> "$log"
  done
done < "$OUT/trace245.tsv"
echo "traces $SECONDS s"
P="k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5,exact_below=24576),view=run(2)"
for p in indexer iid; do
  for v in main exp-pf1; do
    for s in "" "$P,threads=384" "$P,threads=384,tail=2@396" "$P,threads=256" "$P,threads=512"; do
      ".gpu/05-$v" $p 512x262144,1024x262144,512x131072 $s 2>>"$OUT/err.txt" | grep '^{' \
        | sed "s/^{/{\"part\":\"threads\",\"variant\":\"$v\",\"given\":\"$s\",/" >> "$log"
    done
  done
done
echo "threads $SECONDS s"
for round in 1 2; do
  for p in indexer iid; do
    for v in main exp-pf1; do
      ".gpu/05-$v" $p 512x65536,1024x49152,1024x65536,1536x65536 2>>"$OUT/err.txt" | grep '^{' \
        | sed "s/^{/{\"part\":\"t256\",\"round\":$round,\"variant\":\"$v\",/" >> "$log"
    done
  done
done
echo "all $SECONDS s"

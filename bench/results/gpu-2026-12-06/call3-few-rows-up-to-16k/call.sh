#!/usr/bin/env bash
# Large batches of rows up to 12K (ragged and full): the default map (register row-local) against the
# streaming row-local kernel and the exact pool on 384 and 256 threads (v27).
set -uo pipefail
R=$OUT/r; mkdir -p $R
export TOPK_CACHE_DIR=/tmp/kcache; mkdir -p $TOPK_CACHE_DIR
nvidia-smi --query-gpu=name --format=csv,noheader
start=$SECONDS
S="16x8192,64x8192,256x8192,512x8192,512x16384,256x16384,1000x12288"
P="k=2048,dtype=f32,map=persistent,propose=sampled(stride=128,rho=1.5,rescue=2,exact_below=24576),coarse=11,digits=11+11+10,view=run(2),prefetch=1"
for p in indexer; do
  for v in default "k=2048,map=rowlocal(streaming),propose=exact,threads=1024" "$P,threads=384" "$P,threads=256"; do
    spec=$v; [[ $v == default ]] && spec=
    timeout 60 .gpu/operator-matrix-v27 $p $S $spec 2>&1 | grep '^{' | sed "s/^{/{\"variant\":\"$v\",/" >> $R/rowsfew.jsonl
    echo "$p $v $((SECONDS-start)) s"
  done
done
python3 - $R/rowsfew.jsonl <<'PY2' | tee $R/rowsfew.txt
import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l)
    print(f'{r["profile"]:8} {r["rows"]:>6}x{r["width"]:<6} {r["median_ms"]:8.4f} ms x{r["median_ms"]/r["floor_ms"]:5.2f} exact={r["exact"]} grid={r["grid"]}x{r["ctas_per_sm"]} {r["variant"][:60]}')
PY2

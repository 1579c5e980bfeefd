#!/usr/bin/env bash
# 1) A/B v27 -> v29 on few rows; 2) prefill-like rows (terminal windows with M >= N: lengths 1..N; and
# 16384 x 32K: lengths 16K-32K) under the default map (v27), the row-local kernels and a 1024-thread
# exact pool; the register kernel of v30 (rows past its tile streamed); phase probes;
# 3) on v30: gpu_exact (register + default map), gpu_half, gpu_prior.
set -uo pipefail
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $R/gpu.txt 2>&1
cat $R/gpu.txt
export TOPK_CACHE_DIR=/tmp/kcache; mkdir -p $TOPK_CACHE_DIR
tar xJf .gpu/kcache.tar.xz -C $TOPK_CACHE_DIR
start=$SECONDS
S="16384x16384,16384x8192,16384x32768"
run() {  # binary profile label spec...
  local bin=$1 p=$2 label=$3; shift 3
  timeout 80 $bin $p ${S} "$@" 2>&1 | grep '^{' | sed "s/^{/{\"variant\":\"$label\",/" >> $R/short.jsonl
  echo "short $label $p $((SECONDS-start)) s"
}
for p in indexer iid; do
  run .gpu/operator-matrix-v27 $p v27-default
  run .gpu/operator-matrix $p v30-register "k=2048,map=rowlocal(register),propose=exact,threads=1024"
done
S="16384x16384,16384x8192" run .gpu/operator-matrix-v27 indexer v27-register "k=2048,map=rowlocal(register),propose=exact,threads=1024"
run .gpu/operator-matrix-v27 indexer v27-streaming "k=2048,map=rowlocal(streaming),propose=exact,threads=1024"
run .gpu/operator-matrix-v27 indexer v27-pool1024-exact "k=2048,map=persistent,propose=exact,threads=1024"
python3 - $R/short.jsonl <<'PY2' | tee $R/short.txt
import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l)
    print(f'{r["profile"]:8} {r["rows"]:>6}x{r["width"]:<6} {r["median_ms"]:8.4f} ms x{r["median_ms"]/r["floor_ms"]:5.2f} exact={r["exact"]} routes={r["routes"]} grid={r["grid"]}x{r["ctas_per_sm"]} {r["variant"]}')
PY2
pack
OUT=$R/ab VARIANTS="v27 v29" ROUNDS=2 \
  SHAPES="1x65536,1x131072,1x262144,8x65536,8x262144,1x1048576,8x1048576,32x65536" \
  timeout 110 bash bench/ab.sh > $R/ab.txt 2>&1
echo "ab rc=$? $((SECONDS-start)) s"
tail -24 $R/ab.txt
pack
for s in 16384x16384 16384x32768; do
  TOPK_PHASE_PROBE=1 timeout 40 .gpu/operator-matrix-v27 indexer $s 2>&1 | grep -E '^\{"phases' | sed "s/^/v27-default $s /" >> $R/probe.txt
  TOPK_PHASE_PROBE=1 timeout 40 .gpu/operator-matrix indexer $s "k=2048,map=rowlocal(register),propose=exact,threads=1024" 2>&1 | grep -E '^\{"phases' | sed "s/^/v30-register $s /" >> $R/probe.txt
done
cat $R/probe.txt
echo "probe $((SECONDS-start)) s"
pack
(timeout 200 .gpu/gpu_exact --ignored register_rowlocal the_default_map --test-threads=2 > $R/gpu_exact.txt 2>&1; echo "gpu_exact rc=$?" >> $R/gpu_exact.txt) &
(timeout 200 .gpu/gpu_half --ignored --test-threads=5 > $R/gpu_half.txt 2>&1; echo "gpu_half rc=$?" >> $R/gpu_half.txt) &
(timeout 200 .gpu/gpu_prior --ignored --test-threads=3 > $R/gpu_prior.txt 2>&1; echo "gpu_prior rc=$?" >> $R/gpu_prior.txt) &
wait
grep -E "^test |test result|panicked|rc=" $R/gpu_exact.txt $R/gpu_half.txt $R/gpu_prior.txt | head -40
echo "end $((SECONDS-start)) s"
pack

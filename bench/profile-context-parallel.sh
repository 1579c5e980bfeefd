#!/usr/bin/env bash
# Per-stage GPU time of the context-parallel pipeline on one device (ranks = 1), from an Nsight
# Systems trace of the context-parallel program. Run on the GPU machine from the repository root with the
# bundle of scripts/gpu-bundle.sh in .gpu/. Usage: bench/profile-context-parallel.sh [PROFILE] [MxN]
set -euo pipefail
OUT=${OUT:-./out}
mkdir -p "$OUT"
nsys profile --cuda-graph-trace=node -o "$OUT/cp" -f true \
  .gpu/context-parallel "${1:-iid}" "${2:-512x1048576}" 1 > "$OUT/cp-run.txt"
nsys stats -q --report cuda_gpu_trace --format csv -o "$OUT/cp" "$OUT/cp.nsys-rep" > /dev/null
python3 - "$OUT"/cp_cuda_gpu_trace.csv <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
# The last 20 replays of the sharded graph: the kernels named topk_sharded_*, in order.
sh = [r for r in rows if 'topk_sharded' in r.get('Name', '')]
per_call = 13
calls = [sh[i:i + per_call] for i in range(len(sh) - 20 * per_call, len(sh), per_call)]
stages = ['sample', 'proposal', 'certify', 'route', 'digit0', 'boundary0', 'digit1',
          'boundary1', 'digit2', 'boundary2', 'count', 'emit', 'copy']
tot = collections.defaultdict(float)
for c in calls:
    for name, r in zip(stages, c):
        tot[name] += float(r['Duration (ns)']) / 1e3 / len(calls)
for name in stages:
    print(f"{name:<10} {tot[name]:9.1f} us")
print(f"{'sum':<10} {sum(tot.values()):9.1f} us")
other = collections.Counter(r['Name'][:40] for r in rows if 'topk_sharded' not in r.get('Name', ''))
print(other.most_common(6))
PY

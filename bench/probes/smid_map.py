"""Which CTAs of a 2-per-SM grid share an SM: launches 264 CTAs of 512 threads with enough
shared memory for two per SM and prints how block b relates to the block on the same SM."""
import collections
import cupy as cp

src = r'''
extern "C" __global__ void where(int* out) {
  extern __shared__ int pad[];
  if (threadIdx.x == 0) {
    unsigned s; asm volatile("mov.u32 %0, %smid;" : "=r"(s));
    pad[0] = s;
    out[blockIdx.x] = pad[0];
  }
}
'''
k = cp.RawKernel(src, "where")
k.max_dynamic_shared_size_bytes = 100 * 1024
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
grid = 2 * sms
out = cp.full(grid, -1, dtype=cp.int32)
k((grid,), (512,), (out,), shared_mem=100 * 1024)
smid = out.get().tolist()
by_sm = collections.defaultdict(list)
for b, s in enumerate(smid):
    by_sm[s].append(b)
pairs = [tuple(v) for v in by_sm.values()]
diffs = collections.Counter(abs(p[1] - p[0]) for p in pairs if len(p) == 2)
print("sms", sms, "grid", grid, "distinct sms used", len(by_sm))
print("block-index gap between the two CTAs of an SM:", diffs.most_common(5))
print("first 8 blocks on sms", smid[:8], "blocks 132..139 on", smid[sms:sms + 8])

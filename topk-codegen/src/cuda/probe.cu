// ---- Phase-probe hooks (topk_codegen::probe): empty unless the prelude defines PHASE_PROBE. ----
// A probed build reads the %globaltimer clock on thread 0 at the row's start, after the
// proposal and once the frontier is formed, and after the refinement packs the three durations
// into the row's |Q0| word and the worker and start into its route word (units and bit fields:
// topk_codegen::probe).
#ifdef PHASE_PROBE
__device__ __forceinline__ u64 probe_clock() {
  u64 t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// Clock reads of the row in flight: start, proposal done, frontier formed; then the packed times
// (index 0) and the start again (index 3, for the stamp).
#define PROBE_ROW_START()      \
  __shared__ u64 probe_t[4]; \
  if (threadIdx.x == 0) probe_t[0] = probe_t[1] = probe_t[3] = probe_clock()
#define PROBE_PROPOSED 1
#define PROBE_FRONTIER 2
#define PROBE_MARK(at) \
  if (threadIdx.x == 0) probe_t[at] = probe_clock()
#define PROBE_ROW_END(route, q0) probe_row_end(route, q0, probe_t)

// After the refinement: the phase times go to `q0`, and the route word returned carries the
// worker and the row's start above the route.
__device__ __forceinline__ int probe_row_end(int route, int& q0, u64* probe_t) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const u64 t3 = probe_clock();
    const u64 a = min((probe_t[1] - probe_t[0]) / PROBE_PHASE_UNIT_NS, 1023ull);
    const u64 b = min((probe_t[2] - probe_t[1]) / PROBE_PASS_UNIT_NS, 4095ull);
    const u64 d = min((t3 - probe_t[2]) / PROBE_PHASE_UNIT_NS, 1023ull);
    probe_t[0] = a | (d << 10) | (b << 20);
  }
  __syncthreads();
  q0 = (int)(u32)probe_t[0];
  const u32 stamp =
      (u32)route | ((blockIdx.x & 1023u) << 3) | ((u32)(probe_t[3] / PROBE_START_UNIT_NS) << 13);
  __syncthreads();
  return (int)stamp;
}
#else
#define PROBE_ROW_START()
#define PROBE_MARK(at)
#define PROBE_ROW_END(route, q0) (route)
#endif

// ---- Memory access: cache-global loads (§5.3) and a warp-uniform row stream. ----
__device__ __forceinline__ float4 load_cg4(const float4* p) {
  float4 v;
  asm("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}

// The same load, its line marked first to leave L2 (evict-first policy), for a pass that reads
// its row for the last time. 0.4-3% faster on rows of 128K-1M (bench/RESULTS.md), likely as the
// lines still wanted (other workers' views, frontier spills, outputs) outlive the stream's.
// Not for the exact coarse boundary, whose second pass reads a short row back from L2.
__device__ __forceinline__ float4 load_cg4_evict_first(const float4* p) {
  u64 policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  float4 v;
  asm("ld.global.cg.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(policy));
  return v;
}

template <bool EVICT_FIRST>
__device__ __forceinline__ float4 load_row4(const float4* p) {
  if constexpr (EVICT_FIRST) return load_cg4_evict_first(p);
  else return load_cg4(p);
}

__device__ __forceinline__ float load_cg(const float* p) {
  float v;
  asm("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

// Sends the lines of the batch `ahead` batches past the warp's current one (the batch of this
// thread's index j) to L2 ahead of their loads: one address every 128 bytes of the warp's runs
// of 32 vectors, a lane each, the first 4 * UNROLL lanes (a run that does not start on a line
// leaves its last partial line to the load); positions at or past nvec are skipped. The lines
// arrive with L2's normal eviction priority, not the certification pass's evict-first one. For
// the spec's `prefetch` (bench/RESULTS.md, what moved the numbers).
static_assert(4 * UNROLL <= 32 && THREADS % 32 == 0, "prefetch_batch gives each lane one line");
__device__ __forceinline__ void prefetch_batch(const float4* body, int j, int ahead, int nvec) {
  const int lane = threadIdx.x & 31;
  if (lane < 4 * UNROLL) {
    const int idx = (j - lane) + ahead * UNROLL * THREADS + (lane >> 2) * THREADS + (lane & 3) * 8;
    if (idx < nvec) asm volatile("prefetch.global.L2 [%0];" ::"l"(body + idx));
  }
}

// The vector handler of a stream without a gate (never called).
struct NoQuad {
  __device__ __forceinline__ void operator()(const float4&, int) const {}
};

// Calls f(x, i) for every position i of row[0, L), in no particular order; threads make
// different numbers of calls, so f must not use warp collectives. Up to three leading elements
// are peeled so the body runs on 16-byte aligned float4 loads whatever the pitch or base
// alignment; the last partial vector is read as scalars. UNROLL vectors are in flight per thread.
// EVICT_FIRST: the vectors' lines leave L2 first (load_cg4_evict_first).
// PREFETCH_AHEAD (the spec's `prefetch`): each batch sends the lines of the batch that many
// batches ahead to L2 (prefetch_batch).
// GATE: the batched vectors go whole to quad(v, i) (i: the position of v.x), except those whose
// four scores are all below `gate`, which nothing sees: one predicate chain and one branch per
// vector instead of a branch per score. A NaN fails every compare, so its vector reaches quad.
// The peeled scores and the last partial vector still go to f one by one.
// With GATE the vectors after the last full batch (fewer than UNROLL per thread) form one
// partial batch whose loads are issued together, each predicated on its position: one round
// trip to memory instead of up to three (codegen version 18). Without it they stay a loop of
// one vector per trip, which the compiler unrolls by two: the partial batch made the exact
// routes' passes over rows of 16K-24K 5-14% slower there (bench/RESULTS.md).

template <bool EVICT_FIRST = false, bool GATE = false, class F, class Q = NoQuad>
__device__ __forceinline__ void stream_row(const float* __restrict__ row, int L, F&& f,
                                           float gate = 0.0f, Q&& quad = Q()) {
  const int tid = threadIdx.x;
  int head = (int)(((16u - ((u32)(u64)row & 15u)) & 15u) >> 2);
  if (head > L) head = L;
  if (tid < head) f(load_cg(row + tid), tid);
  const float4* body = reinterpret_cast<const float4*>(row + head);
  const int nvec = (L - head) >> 2;
  int j = tid;
  if constexpr (PREFETCH_AHEAD > 1) {
#pragma unroll
    for (int a = 1; a < PREFETCH_AHEAD; ++a) prefetch_batch(body, j, a, nvec);
  }
  for (; j + (UNROLL - 1) * THREADS < nvec; j += UNROLL * THREADS) {
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = load_row4<EVICT_FIRST>(body + j + u * THREADS);
    if constexpr (PREFETCH_AHEAD > 0) prefetch_batch(body, j, PREFETCH_AHEAD, nvec);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (GATE) {
        if (!(v[u].x < gate && v[u].y < gate && v[u].z < gate && v[u].w < gate))
          quad(v[u], head + 4 * (j + u * THREADS));
        continue;
      }
      const int i = head + 4 * (j + u * THREADS);
      f(v[u].x, i);
      f(v[u].y, i + 1);
      f(v[u].z, i + 2);
      f(v[u].w, i + 3);
    }
  }
  if constexpr (GATE) {
    if (j < nvec) {
      float4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        v[u] = j + u * THREADS < nvec ? load_row4<EVICT_FIRST>(body + j + u * THREADS)
                                      : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (j + u * THREADS >= nvec) break;
        if (!(v[u].x < gate && v[u].y < gate && v[u].z < gate && v[u].w < gate))
          quad(v[u], head + 4 * (j + u * THREADS));
      }
    }
  } else {
    for (; j < nvec; j += THREADS) {
      const float4 v = load_row4<EVICT_FIRST>(body + j);
      const int i = head + 4 * j;
      f(v.x, i);
      f(v.y, i + 1);
      f(v.z, i + 2);
      f(v.w, i + 3);
    }
  }
  const int done = head + 4 * nvec;
  if (done + tid < L) f(load_cg(row + done + tid), done + tid);
}

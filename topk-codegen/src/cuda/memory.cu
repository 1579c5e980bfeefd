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

// ---- 16-bit scores (SCORE_BITS 16): loaded as their bits, used as their exact FP32 value. ----
// Widening is exact and keeps the order, so every pass past the loads is the FP32 code.

// The FP32 value of 16-bit score bits `h` (bfloat16: the top half of its FP32; FP16: the
// conversion instruction).
__device__ __forceinline__ float widen_score(u32 h) {
  return SCORE_BF16 ? __uint_as_float(h << 16) : f32_of_f16(h);
}

__device__ __forceinline__ float load_cg(const unsigned short* p) {
  unsigned short h;
  asm("ld.global.cg.u16 %0, [%1];" : "=h"(h) : "l"(p));
  return widen_score(h);
}

// The four scores of a 16-bit vector's words lo, hi (two each, the lower position in the low
// half), widened.
__device__ __forceinline__ float4 widen4(u32 lo, u32 hi) {
  if (SCORE_BF16)
    return make_float4(__uint_as_float(lo << 16), __uint_as_float(lo & 0xffff0000u),
                       __uint_as_float(hi << 16), __uint_as_float(hi & 0xffff0000u));
  return make_float4(widen_score(lo & 0xffffu), widen_score(lo >> 16), widen_score(hi & 0xffffu),
                     widen_score(hi >> 16));
}

// A value as the call stores it, in the spec's dtype: a selected score (so exactly a score's
// value) or -inf; narrowing it back is exact.
__device__ __forceinline__ score_t to_score(float x) {
#if SCORE_BITS == 16
  return (score_t)(SCORE_BF16 ? __float_as_uint(x) >> 16 : f16_bits_rn(x));
#else
  return x;
#endif
}

// The 16-byte vector of the row stream: four FP32 scores, or eight 16-bit scores as four words.
#if SCORE_BITS == 16
typedef uint4 row_vec;
#define VEC_SHIFT 3
#define ROW_VEC_ZERO make_uint4(0u, 0u, 0u, 0u)
#else
typedef float4 row_vec;
#define VEC_SHIFT 2
#define ROW_VEC_ZERO make_float4(0.0f, 0.0f, 0.0f, 0.0f)
#endif
// Scores per vector. Macros, as SCORE_BF16: namespace-scope constexpr variables of their own
// changed the f32 kernels' CUBIN (scripts/cubin-hashes.sh).
#define VEC (1 << VEC_SHIFT)

__device__ __forceinline__ uint4 load_cg4(const uint4* p) {
  uint4 v;
  asm("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

__device__ __forceinline__ uint4 load_cg4_evict_first(const uint4* p) {
  u64 policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  uint4 v;
  asm("ld.global.cg.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
  return v;
}

template <bool EVICT_FIRST>
__device__ __forceinline__ uint4 load_row4(const uint4* p) {
  if constexpr (EVICT_FIRST) return load_cg4_evict_first(p);
  else return load_cg4(p);
}

// f(x, i + e) for score e of vector v.
template <class F>
__device__ __forceinline__ void each_score(const float4& v, int i, F& f) {
  f(v.x, i);
  f(v.y, i + 1);
  f(v.z, i + 2);
  f(v.w, i + 3);
}

template <class F>
__device__ __forceinline__ void each_score(const uint4& v, int i, F& f) {
  each_score(widen4(v.x, v.y), i, f);
  each_score(widen4(v.z, v.w), i + 4, f);
}

// quad(q, i) for each four scores q of vector v (i: the position of q.x) not all below `gate`
// (stream_row's GATE): GATE_VEC. A macro for FP32 vectors: the same test as an inline function
// compiled the gated passes of the FP32 kernels differently (scripts/cubin-hashes.sh).
#define GATED_QUAD(v, i, gate, quad) \
  if (!((v).x < (gate) && (v).y < (gate) && (v).z < (gate) && (v).w < (gate))) quad((v), (i))

template <class Q>
__device__ __forceinline__ void gated_quads(const uint4& v, int i, float gate, Q& quad) {
  const float4 lo = widen4(v.x, v.y), hi = widen4(v.z, v.w);
  GATED_QUAD(lo, i, gate, quad);
  GATED_QUAD(hi, i + 4, gate, quad);
}

#if SCORE_BITS == 16
#define GATE_VEC(v, i, gate, quad) gated_quads(v, i, gate, quad)
#else
#define GATE_VEC(v, i, gate, quad) GATED_QUAD(v, i, gate, quad)
#endif

// Sends the lines of the batch `ahead` batches past the warp's current one (the batch of this
// thread's index j) to L2 ahead of their loads: one address every 128 bytes of the warp's runs
// of 32 vectors, a lane each, the first 4 * UNROLL lanes (a run that does not start on a line
// leaves its last partial line to the load); positions at or past nvec are skipped. The lines
// arrive with L2's normal eviction priority, not the certification pass's evict-first one. For
// the spec's `prefetch` (bench/RESULTS.md, what moved the numbers).
static_assert(4 * UNROLL <= 32 && THREADS % 32 == 0, "prefetch_batch gives each lane one line");
__device__ __forceinline__ void prefetch_batch(const row_vec* body, int j, int ahead, int nvec) {
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
// different numbers of calls, so f must not use warp collectives. The scores before the row's
// first 128-byte line boundary are peeled (one per thread), so the body runs on 16-byte vector
// loads (row_vec: VEC scores) whatever the pitch, base or window start, and a warp's run of 32
// vectors covers four whole lines rather than parts of five (prefetch_batch's one address per
// line then reaches each of them); the last partial vector is read as scalars. UNROLL vectors are
// in flight per thread. 16-bit scores are widened after their loads (each_score, gated_quads).
// EVICT_FIRST: the vectors' lines leave L2 first (load_cg4_evict_first).
// PREFETCH_AHEAD (the spec's `prefetch`): each batch sends the lines of the batch that many
// batches ahead to L2 (prefetch_batch).
// GATE: the batched vectors go to quad(q, i) four scores at a time (i: the position of q.x),
// except fours whose scores are all below `gate`, which nothing sees: one predicate chain and
// one branch per four instead of a branch per score. A NaN fails every compare, so its four
// reach quad. The peeled scores and the last partial vector still go to f one by one.
// With GATE the vectors after the last full batch (fewer than UNROLL per thread) form one
// partial batch whose loads are issued together, each predicated on its position: one round
// trip to memory instead of up to three (codegen version 18). Without it they stay a loop of
// one vector per trip, which the compiler unrolls by two: the partial batch made the exact
// routes' passes over rows of 16K-24K 5-14% slower there (bench/RESULTS.md).

static_assert(THREADS >= 128 / (int)sizeof(score_t), "stream_row peels a line's scores, one per thread");
template <bool EVICT_FIRST = false, bool GATE = false, class F, class Q = NoQuad>
__device__ __forceinline__ void stream_row(const score_t* __restrict__ row, int L, F&& f,
                                           float gate = 0.0f, Q&& quad = Q()) {
  const int tid = threadIdx.x;
  int head = (int)(((128u - ((u32)(u64)row & 127u)) & 127u) / (u32)sizeof(score_t));
  if (head > L) head = L;
  if (tid < head) f(load_cg(row + tid), tid);
  const row_vec* body = reinterpret_cast<const row_vec*>(row + head);
  const int nvec = (L - head) >> VEC_SHIFT;
  int j = tid;
  if constexpr (PREFETCH_AHEAD > 1) {
#pragma unroll
    for (int a = 1; a < PREFETCH_AHEAD; ++a) prefetch_batch(body, j, a, nvec);
  }
  for (; j + (UNROLL - 1) * THREADS < nvec; j += UNROLL * THREADS) {
    row_vec v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = load_row4<EVICT_FIRST>(body + j + u * THREADS);
    if constexpr (PREFETCH_AHEAD > 0) prefetch_batch(body, j, PREFETCH_AHEAD, nvec);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (GATE) {
        GATE_VEC(v[u], head + VEC * (j + u * THREADS), gate, quad);
        continue;
      }
      const int i = head + VEC * (j + u * THREADS);
      each_score(v[u], i, f);
    }
  }
  if constexpr (GATE) {
    if (j < nvec) {
      row_vec v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        v[u] = j + u * THREADS < nvec ? load_row4<EVICT_FIRST>(body + j + u * THREADS)
                                      : ROW_VEC_ZERO;
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (j + u * THREADS >= nvec) break;
        GATE_VEC(v[u], head + VEC * (j + u * THREADS), gate, quad);
      }
    }
  } else {
    for (; j < nvec; j += THREADS) {
      const row_vec v = load_row4<EVICT_FIRST>(body + j);
      const int i = head + VEC * j;
      each_score(v, i, f);
    }
  }
  const int done = head + VEC * nvec;
  if (done + tid < L) f(load_cg(row + done + tid), done + tid);
}

// ---- Phase 2 (paper §4.3, §5.3): fused certification and candidate formation. ----

// The lean vector handler (codegen version 19) on 512-thread and wider CTAs, which the default
// map gives rows of 128K and more, where an admitted score is rare: a vector with one admitted
// score stores it once, and a NaN raises the flag with one predicated store. The 384- and
// 256-thread pools, which take the denser short rows, measured slower with it
// (bench/RESULTS.md) and keep codegen version 16's handler.
constexpr bool LEAN_QUAD = THREADS >= 512;

// One complete-row pass: every score in [lo, hi) (hi NaN: no upper bound) is compared in FP32
// with the endpoints and appended, on its first encounter, to the on-chip frontier that
// refinement starts from. Returns the frontier count (the certificate C(tau), eq. 16). Its loads
// mark their lines first to leave L2 (stream_row's EVICT_FIRST): the row is read again only
// by a rare rescue's band pass or a recovery's exact passes. Clears s_hist for the refinement
// while it streams (refine_frontier).
template <class Src>
__device__ int collect_band(const Src& src, float lo, float hi, RowCtx& c) {
  clear_hist(HIST_BINS);
  int* spill = c.spill;
  const int spill_cap = c.spill_cap;
  // A NaN is flagged in shared memory from the rare path: a per-thread flag updated there would
  // cost the common path a register move per score.
  auto one = [&](float x, int i) {
    if (!(x < lo)) {  // admitted, or NaN: the rare path
      if (x != x) *s_counter(C_NAN) = 1;
      else if (!(x >= hi)) append_one(desc_key32(x), i, spill, spill_cap);
    }
  };
  // A vector with a score not below lo (or a NaN): its admitted scores reserve their frontier
  // slots with one atomic and are stored without the spill check when they all fit on chip, one
  // branch per vector instead of one per score (codegen version 16: 1-14% faster on rows of
  // 48K-128K, most on i.i.d. rows, bench/RESULTS.md).
  auto quad = [&](const float4& v, int i) {
    const bool a0 = v.x >= lo && !(v.x >= hi);
    const bool a1 = v.y >= lo && !(v.y >= hi);
    const bool a2 = v.z >= lo && !(v.z >= hi);
    const bool a3 = v.w >= lo && !(v.w >= hi);
    const bool nan = v.x != v.x || v.y != v.y || v.z != v.z || v.w != v.w;
    if constexpr (LEAN_QUAD) flag_nan_if(nan);
    else if (nan) *s_counter(C_NAN) = 1;
    const int n = (int)a0 + (int)a1 + (int)a2 + (int)a3;
    if (n == 0) return;
    int pos = reserve_frontier_slots(n);
    if (pos + n <= CAP0) {
      u32* keys = s_keys(0);
      int* idx = s_idx(0);
      if (LEAN_QUAD && n == 1) {
        // One admitted score, the usual case on long i.i.d. rows: its key and position
        // selected from the predicates and stored once, instead of four predicated stores.
        keys[pos] = desc_key32(a0 ? v.x : a1 ? v.y : a2 ? v.z : v.w);
        idx[pos] = i + (a0 ? 0 : a1 ? 1 : a2 ? 2 : 3);
        return;
      }
      if (a0) { keys[pos] = desc_key32(v.x); idx[pos] = i; ++pos; }
      if (a1) { keys[pos] = desc_key32(v.y); idx[pos] = i + 1; ++pos; }
      if (a2) { keys[pos] = desc_key32(v.z); idx[pos] = i + 2; ++pos; }
      if (a3) { keys[pos] = desc_key32(v.w); idx[pos] = i + 3; }
    } else {
      if (a0) frontier_store(spill, spill_cap, 0, pos++, desc_key32(v.x), i);
      if (a1) frontier_store(spill, spill_cap, 0, pos++, desc_key32(v.y), i + 1);
      if (a2) frontier_store(spill, spill_cap, 0, pos++, desc_key32(v.z), i + 2);
      if (a3) frontier_store(spill, spill_cap, 0, pos, desc_key32(v.w), i + 3);
    }
  };
  src.for_each_last_read_from(lo, one, quad);
  __syncthreads();
  const int n = *s_counter(C_COUNT);
  c.nan |= *s_counter(C_NAN) != 0;
  __syncthreads();
  return n;
}

struct ExactBoundary {
  float lo;   // endpoint of tau*: the frontier is [lo, hi)
  float hi;   // endpoint of tau* - 1: scores >= hi are committed (NaN when tau* is the first bin)
  int quota;  // k0 = K - |E0|
};

// Exact coarse recovery (eq. 20): histogram of every valid score, tau* = min{b : C(b) >= K};
// a second pass commits the bins ahead of tau* and keeps the boundary bin as the frontier, and
// clears s_hist for the refinement as it starts (refine_frontier).
template <class Src>
__device__ ExactBoundary exact_coarse(const Src& src, RowCtx& c, int* __restrict__ out_row) {
  clear_hist(COARSE_BINS);
  __syncthreads();
  u32 nan = 0u;
  src.for_each([&](float x, int i) {
    nan |= x != x ? 1u : 0u;
    atomicAdd(&s_hist()[coarse_bin(x)], 1);
  });
  c.nan |= nan != 0u;
  __syncthreads();
  const Boundary b = find_boundary<COARSE_BINS>(K);
  if (threadIdx.x == 0) *s_counter(C_COUNT) = 0;
  coarse_endpoints_to_scratch(b.bin, b.bin - 1);
  ExactBoundary e;
  e.lo = __int_as_float(s_scratch()[SCRATCH_F0]);
  e.hi = __int_as_float(s_scratch()[SCRATCH_F1]);
  e.quota = K - b.before;
  int* spill = c.spill;
  const int spill_cap = c.spill_cap;
  const float lo = e.lo, hi = e.hi;
  clear_hist(HIST_BINS);  // the boundary scan's reads ended before its barriers
  src.for_each([&](float x, int i) {
    if (x >= lo) {
      if (x >= hi) commit_one(i, x, out_row);
      else append_one(desc_key32(x), i, spill, spill_cap);
    }
  });
  __syncthreads();
  return e;
}

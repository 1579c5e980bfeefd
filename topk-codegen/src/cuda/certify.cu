// ---- Phase 2 (paper §4.3, §5.3): fused certification and candidate formation. ----

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
  src.for_each_last_read([&](float x, int i) {
    if (!(x < lo)) {  // admitted, or NaN: the rare path
      if (x != x) *s_counter(C_NAN) = 1;
      else if (!(x >= hi)) append_one(desc_key32(x), i, spill, spill_cap);
    }
  });
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
      if (x >= hi) commit_one(i, out_row);
      else append_one(desc_key32(x), i, spill, spill_cap);
    }
  });
  __syncthreads();
  return e;
}

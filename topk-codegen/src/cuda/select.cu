// ---- One row through the three phases; every route ends in the same refinement (§4.1). ----

#ifdef CALL_PRIOR
// prior=P/R (the CPU backend's cpu::prior is the reference): the row admits the scores down to
// PRIOR_PRIMARY_BINS coarse bins below its prior's bin, then the band down to
// PRIOR_RESCUE_BINS; certified when at least K and at most PRIOR_CAP scores are admitted.
// Returns the route with `lo` the frontier's lower endpoint, or ROUTE_DIRECT_EXACT when the row
// has no prior or it did not certify; its counters are then reset, and the row starts again
// from the spec's proposal. Every thread calls.
template <class Src>
__device__ int prior_route(const Src& src, RowCtx& c, float& lo) {
  const float p = s_row_io.prior;
  if (p != p) return ROUTE_DIRECT_EXACT;
  const u32 last = (u32)COARSE_BINS - 1u;
  const u32 bin = min(coarse_bin(p), last);
  const float e0 = coarse_endpoint_fast(min(bin + (u32)PRIOR_PRIMARY_BINS, last));
  int admitted = collect_band(src, e0, quiet_nan(), c);
  int route = ROUTE_PRIOR_PRIMARY;
  lo = e0;
  if (admitted < K && PRIOR_RESCUE_BINS > PRIOR_PRIMARY_BINS) {
    const float e1 = coarse_endpoint_fast(min(bin + (u32)PRIOR_RESCUE_BINS, last));
    admitted = collect_band(src, e1, e0, c);
    lo = e1;
    route = ROUTE_PRIOR_RESCUE;
  }
  if (admitted >= K && admitted <= PRIOR_CAP) return route;
  reset_row_counters();
  __syncthreads();
  return ROUTE_DIRECT_EXACT;
}
#endif

// Selects row `row` (valid length L, L > K handled here; L <= K filled directly). `src` streams
// the row's scores; `row_ptr` is used by the sampled view. Returns the route; `q0` gets |Q0|.
template <class Src>
__device__ int select_row(const Src& src, const score_t* __restrict__ row_ptr, int L, int phase,
                          int* __restrict__ out_row, RowCtx& c, int& q0) {
  q0 = 0;
  PROBE_ROW_START();
  if (L <= K) {
#if CALL_IO
    put_short_row(out_row, L, c.nan);
#else
    for (int i = threadIdx.x; i < K; i += THREADS) out_row[i] = i < L ? i : -1;
#endif
    return ROUTE_SHORT;
  }
  reset_row_counters();
  __syncthreads();
  int route = ROUTE_DIRECT_EXACT;
  float lo = 0.0f, hi = quiet_nan();
  int quota = K;
#ifdef CALL_PRIOR
  route = prior_route(src, c, lo);
  const bool from_prior = route != ROUTE_DIRECT_EXACT;
  if (SAMPLED && !from_prior) {
#else
  if (SAMPLED) {
#endif
    const ProposalResult p = propose_boundary(row_ptr, L, phase, c.tail);
    PROBE_MARK(PROBE_PROPOSED);
    if (p.usable) {
      // sampled_route's decision (row.cu), written out: see there.
      int admitted = collect_band(src, p.e0, quiet_nan(), c);
      lo = p.e0;
      if (admitted >= K) {
        route = ROUTE_PRIMARY;
      } else if (RESCUE) {
        // Band rescue (eq. 18-19): append only scores between the two endpoints.
        admitted = collect_band(src, p.e1, p.e0, c);
        lo = p.e1;
        route = admitted >= K ? ROUTE_RESCUE : ROUTE_RECOVERY;
      } else {
        route = ROUTE_RECOVERY;
      }
    }
  }
  if (route == ROUTE_RECOVERY || route == ROUTE_DIRECT_EXACT) {
    const ExactBoundary e = exact_coarse(src, c, out_row);
    lo = e.lo;
    hi = e.hi;
    quota = e.quota;
  }
  // Both frontiers span a narrow range, whose linear slices start the refinement: the exact
  // routes' one coarse bin, the sampled routes' scores from lo up to the view's largest sample
  // (kept in block scratch through the passes, not in a register).
#ifdef CALL_PRIOR
  // A prior's frontier has no view above it: the first round takes the key digit.
  const float upper = from_prior ? quiet_nan()
                      : route == ROUTE_RECOVERY || route == ROUTE_DIRECT_EXACT ? hi : view_top();
#else
  const float upper = route == ROUTE_RECOVERY || route == ROUTE_DIRECT_EXACT ? hi : view_top();
#endif
  PROBE_MARK(PROBE_FRONTIER);
  q0 = *s_counter(C_COUNT);
  refine_frontier(src, lo, hi, upper, quota, c, out_row);
  return PROBE_ROW_END(route, q0);
}

__device__ __forceinline__ RowCtx make_ctx(int* spill, int spill_cap) {
  RowCtx c;
  c.spill = spill + (long long)blockIdx.x * 4 * spill_cap;
  c.spill_cap = spill_cap;
  c.nan = false;
  c.tail = false;
  return c;
}

// Reads and checks a row's valid length; reports a bad one and treats the row as empty.
__device__ __forceinline__ int checked_length(const int* __restrict__ lengths, int row, int width,
                                              u32* __restrict__ control) {
  int L = lengths[row];
  if (L < 0 || L > width) {
    if (threadIdx.x == 0) atomicOr(control + CONTROL_STATUS, STATUS_BAD_LENGTH);
    L = 0;
  }
  return L;
}

__device__ __forceinline__ void finish_row(RowCtx& c, int row, int route, int q0,
                                           u32* __restrict__ control, int* __restrict__ row_info) {
  const int any_nan = __syncthreads_or(c.nan ? 1 : 0);
  if (threadIdx.x == 0) {
    if (any_nan) atomicOr(control + CONTROL_STATUS, STATUS_NAN);
    if (row_info) { row_info[2 * row] = route; row_info[2 * row + 1] = q0; }
  }
  c.nan = false;
}

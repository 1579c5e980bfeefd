// ---- One row through the three phases; every route ends in the same refinement (§4.1). ----

// Selects row `row` (valid length L, L > K handled here; L <= K filled directly). `src` streams
// the row's scores; `row_ptr` is used by the sampled view. Returns the route; `q0` gets |Q0|.
template <class Src>
__device__ int select_row(const Src& src, const float* __restrict__ row_ptr, int L, int phase,
                          int* __restrict__ out_row, RowCtx& c, int& q0) {
  q0 = 0;
  if (L <= K) {
    for (int i = threadIdx.x; i < K; i += THREADS) out_row[i] = i < L ? i : -1;
    return ROUTE_SHORT;
  }
  if (threadIdx.x == 0) { *c.count = 0; *c.out_count = 0; *c.tie_count = 0; }
  __syncthreads();
  int route = ROUTE_DIRECT_EXACT;
  float lo = 0.0f, hi = quiet_nan();
  int quota = K;
  if (SAMPLED) {
    const ProposalResult p = propose_boundary(row_ptr, L, phase, c);
    if (p.usable) {
      clear_shared(c.hist, HIST_BINS);
      __syncthreads();
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
  q0 = *c.count;
  refine_frontier(src, lo, hi, quota, c, out_row);
  return route;
}

// Shared-memory layout of one CTA (bytes): histogram, scratch, counters, two frontiers.
struct SharedLayout {
  __device__ static RowCtx carve(unsigned char* smem, int* spill, int spill_cap) {
    RowCtx c;
    int* words = reinterpret_cast<int*>(smem);
    c.hist = words;
    c.scratch = words + HIST_BINS;
    int* counters = c.scratch + SCRATCH_WORDS;
    c.count = counters;
    c.next_count = counters + 1;
    c.out_count = counters + 2;
    c.tie_count = counters + 3;
    u32* keys = reinterpret_cast<u32*>(counters + 8);
    c.cur.skey = keys;
    c.cur.sidx = reinterpret_cast<int*>(keys + CAP);
    c.next.skey = keys + 2 * CAP;
    c.next.sidx = reinterpret_cast<int*>(keys + 3 * CAP);
    c.cur.gkey = reinterpret_cast<u32*>(spill);
    c.cur.gidx = spill + spill_cap;
    c.next.gkey = reinterpret_cast<u32*>(spill + 2 * spill_cap);
    c.next.gidx = spill + 3 * spill_cap;
    c.spill_cap = spill_cap;
    c.nan = false;
    return c;
  }
};

// Reads and checks a row's valid length; reports a bad one and treats the row as empty.
__device__ __forceinline__ int checked_length(const int* __restrict__ lengths, int row, int width,
                                              u32* __restrict__ control) {
  int L = lengths[row];
  if (L < 0 || L > width) {
    if (threadIdx.x == 0) atomicOr(control + 2, STATUS_BAD_LENGTH);
    L = 0;
  }
  return L;
}

__device__ __forceinline__ void finish_row(RowCtx& c, int row, int route, int q0,
                                           u32* __restrict__ control, int* __restrict__ row_info) {
  const int any_nan = __syncthreads_or(c.nan ? 1 : 0);
  if (threadIdx.x == 0) {
    if (any_nan) atomicOr(control + 2, STATUS_NAN);
    if (row_info) { row_info[2 * row] = route; row_info[2 * row + 1] = q0; }
  }
  c.nan = false;
}

// ---- KV-split mapping (paper §4.5, §5.5): SPLITS CTAs scan disjoint segments of one row. ----
// Every segment CTA rebuilds the same row-phased view and proposal, scans its segment once
// and stages the admitted (key, index) pairs; the last CTA to arrive merges the counts and the
// staged pairs and finishes the row exactly like the persistent body (rescue, recovery and
// refinement over the whole row). Work items (row, segment) are claimed in order by a
// persistent pool, so a few long rows keep every SM busy.
//
// Workspace after the per-worker spill slices (4 * spill_cap words per CTA), with one slot per
// CTA of the grid: the staging of slot s holds SPLITS x SEG_CAP pairs, its words hold
// [arrivals, uses, count of each segment]. Row r uses slot r % gridDim.x once the slot's
// previous row (r - gridDim.x) is finished, so the workspace is bounded by the grid, not by the
// batch. The plan sets spill_cap = SEG_CAP - CAP, so a segment that overflows its staging makes
// the whole frontier exceed the finisher's capacity and refinement re-reads the row.

#define SLOT_WORDS (2 + SPLITS)

__device__ __forceinline__ int* segment_staging(int* spill, int spill_cap, int slot, int seg) {
  int* base = spill + (long long)gridDim.x * 4 * spill_cap;
  return base + ((long long)slot * SPLITS + seg) * 2 * SEG_CAP;
}

__device__ __forceinline__ int* slot_words(int* spill, int spill_cap, int slot) {
  int* base = spill + (long long)gridDim.x * 4 * spill_cap +
              (long long)gridDim.x * SPLITS * 2 * SEG_CAP;
  return base + (long long)slot * SLOT_WORDS;
}

__device__ __forceinline__ int load_cg_int(const int* p) {
  int v;
  asm volatile("ld.global.cg.s32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// Scans row[lo, hi) against the primary endpoint e0 and stages the admitted pairs (at most
// SEG_CAP; the count goes on). Returns the segment's count C_p(tau0) (eq. 26).
__device__ int stage_segment(const score_t* __restrict__ row, int lo, int hi, float e0,
                             int* __restrict__ stage, RowCtx& c) {
  if (threadIdx.x == 0) *s_counter(C_NEXT) = 0;
  __syncthreads();
  u32 nan = 0u;
  stream_row(row + lo, hi - lo, [&](float x, int i) {
    if (!(x < e0)) {
      if (x != x) {
        nan = 1u;
      } else {
        const int pos = atomicAdd(s_counter(C_NEXT), 1);
        if (pos < SEG_CAP) {
          stage[pos] = (int)desc_key32(x);
          stage[SEG_CAP + pos] = lo + i;
        }
      }
    }
  });
  c.nan |= nan != 0u;
  __threadfence();  // staged pairs visible device-wide before the arrival below
  __syncthreads();
  const int n = *s_counter(C_NEXT);
  __syncthreads();
  return n;
}

// The finisher: merges the segments' counts (eq. 27) and staged pairs into frontier 0, then
// certifies, rescues or recovers over the whole row and refines, as the persistent body does
// (sampled_route's decision, written out as in select_row: see row.cu).
__device__ int finish_split_row(const GlobalRow& src, const ProposalResult& p, const int* sw,
                                int* spill, int slot, int* __restrict__ out_row, RowCtx& c,
                                int& q0) {
  reset_row_counters();
  __syncthreads();
  int total = 0;
  for (int s = 0; s < SPLITS; ++s) total += load_cg_int(sw + 2 + s);
  if (total <= CAP1 + c.spill_cap) {
    int offset = 0;
    for (int s = 0; s < SPLITS; ++s) {
      const int n = load_cg_int(sw + 2 + s);
      const int* stage = segment_staging(spill, c.spill_cap, slot, s);
      for (int j = threadIdx.x; j < n; j += THREADS)
        frontier_store(c.spill, c.spill_cap, 0, offset + j, (u32)load_cg_int(stage + j),
                       load_cg_int(stage + SEG_CAP + j));
      offset += n;
    }
  }
  if (threadIdx.x == 0) *s_counter(C_COUNT) = total;
  __syncthreads();
  int route;
  int admitted = total;
  float lo = p.e0, hi = quiet_nan();
  int quota = K;
  if (admitted >= K) {
    route = ROUTE_PRIMARY;
  } else if (RESCUE) {
    admitted = collect_band(src, p.e1, p.e0, c);
    lo = p.e1;
    route = admitted >= K ? ROUTE_RESCUE : ROUTE_RECOVERY;
  } else {
    route = ROUTE_RECOVERY;
  }
  if (route == ROUTE_RECOVERY) {
    const ExactBoundary e = exact_coarse(src, c, out_row);
    lo = e.lo;
    hi = e.hi;
    quota = e.quota;
  }
  q0 = *s_counter(C_COUNT);
  clear_hist(HIST_BINS);
  __syncthreads();
  refine_frontier(src, lo, hi, quiet_nan(), quota, c, out_row);
  return route;
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
ENTRY(ENTRY_PARAMS) {
  __shared__ int next_item;
  __shared__ int arrival;
  RowCtx c = make_ctx(spill, spill_cap);
  int m = *live_rows;
  if (m > m_cap || m < 0) {
    if (threadIdx.x == 0 && blockIdx.x == 0) atomicOr(control + CONTROL_STATUS, STATUS_BAD_ROWS);
    m = m < 0 ? 0 : m_cap;
  }
  const long long items = (long long)m * SPLITS;
#if CALL_IO
  const CallArgs call = CALL_ARGS;
#endif
  for (long long item = blockIdx.x; item < items;) {
    const int row = (int)(item / SPLITS);
    const int seg = (int)(item % SPLITS);
#if CALL_IO
    const RowSpan span =
        begin_call_row(call, scores, pitch, row, width, out_pitch, control + CONTROL_STATUS);
    const int L = span.L;
    const score_t* row_ptr = scores + (long long)row * pitch + span.start;
#else
    const int L = checked_length(lengths, row, width, control);
    const score_t* row_ptr = scores + (long long)row * pitch;
#endif
    const int slot = row % (int)gridDim.x;
    int* sw = slot_words(spill, spill_cap, slot);
    if (threadIdx.x == 0) {
      const int use = row / (int)gridDim.x;
      while (*reinterpret_cast<volatile int*>(sw + 1) != use) __nanosleep(100);
    }
    __syncthreads();
    const int phase = view_phase(row);
    ProposalResult p;
    p.usable = false;
    p.e0 = quiet_nan();
    p.e1 = quiet_nan();
    if (L > K) p = propose_boundary(row_ptr, L, phase, false);
    int count = 0;
    if (p.usable) {
      const int seg_len = (((L + SPLITS - 1) / SPLITS) + 3) & ~3;
      const int lo = min(L, seg * seg_len);
      const int hi = min(L, lo + seg_len);
      count = stage_segment(row_ptr, lo, hi, p.e0, segment_staging(spill, spill_cap, slot, seg), c);
    }
    if (threadIdx.x == 0) {
      sw[2 + seg] = count;
      __threadfence();
      arrival = atomicAdd(sw, 1);
    }
    __syncthreads();
    if (arrival == SPLITS - 1) {
      __threadfence();  // the other segments' staging and counts, before reading them
      GlobalRow src;
      src.p = row_ptr;
      src.L = L;
      int* out_row = out + (long long)row * out_pitch;
      int q0 = 0;
      const int route = p.usable ? finish_split_row(src, p, sw, spill, slot, out_row, c, q0)
                                 : select_row(src, row_ptr, L, phase, out_row, c, q0);
#if CALL_IO
      finish_call_row(out_row, L);
#endif
      finish_row(c, row, route, q0, control, row_info);
      if (threadIdx.x == 0) {
        sw[0] = 0;
        __threadfence();
        atomicAdd(sw + 1, 1);  // the slot is free for row + gridDim.x
      }
    } else {
      const int any_nan = __syncthreads_or(c.nan ? 1 : 0);
      if (threadIdx.x == 0 && any_nan) atomicOr(control + CONTROL_STATUS, STATUS_NAN);
      c.nan = false;
    }
    if (threadIdx.x == 0) next_item = (int)gridDim.x + atomicAdd(reinterpret_cast<int*>(control + CONTROL_CURSOR), 1);
    __syncthreads();
    item = next_item;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    __threadfence();
    const u32 done = atomicAdd(control + CONTROL_EXITS, 1u);
    if (done == gridDim.x - 1) {
      // Last CTA out: hand the counters back zeroed for the next launch (graph replays).
      for (int s = 0; s < (int)gridDim.x; ++s) slot_words(spill, spill_cap, s)[1] = 0;
      control[CONTROL_CURSOR] = 0u;
      control[CONTROL_EXITS] = 0u;
      __threadfence();
    }
  }
}

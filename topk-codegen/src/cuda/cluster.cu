// ---- Cluster mapping (§4.5, §5.5): the CLUSTER_CTAS (8 or 16) CTAs of a thread-block cluster
// share one row. Each CTA streams a contiguous 1/CLUSTER_CTAS of the row (on the exact route
// its segment stays in its shared memory between the two passes where it fits). Their coarse
// histograms are summed through distributed shared memory (DSMEM: each CTA sums one slice of
// the bins over the cluster, then gathers every slice, cluster_sum_hist), so every CTA finds the
// exact coarse boundary itself; every CTA commits its scores above the boundary bin and appends
// the bin's scores to rank 0's frontier (slots reserved once per CTA, continuing in rank 0's
// global spill slice); rank 0 refines alone. Clusters loop over rows; every CTA of a cluster
// walks the same rows, so the cluster barriers below are reached by all of them.
//
// With a prior (prior=P/R), a row first admits the scores at or above its prior's cutoff in one
// pass of every CTA (cluster_prior_row). With a sampled proposal (SAMPLED), a row then takes
// the sampled routes of select_row: each
// CTA histograms the view samples of its segment, every CTA proposes the boundary from their
// sum, and one pass of every CTA sends the scores at or above it to rank 0's frontier. Only rows the
// proposal underfills (recovery) or cannot serve (too few samples) take the exact path above.

#define SCRATCH_CTA_BASE 41  // the first of this CTA's output slots on the exact route
#define SCRATCH_CTA_TIE_BASE 42  // the first of its slots in rank 0's frontier
#define C_CTA_SLOTS 5        // counter: this CTA's scores above the boundary bin, then its slots taken
#define C_CTA_TIES 6         // counter: its scores in the boundary bin, then their slots taken
constexpr int COARSE_PER_THREAD = (COARSE_BINS + THREADS - 1) / THREADS;  // bins tid + i * THREADS

__device__ __forceinline__ u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ u32 cluster_index() {
  u32 r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
__device__ __forceinline__ u32 cluster_count() {
  u32 r;
  asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
  return r;
}
// Every thread of the cluster arrives (release) and waits (acquire), both at cluster scope: the
// writes before it, to shared and to global memory (spill slices, output rows), are visible to
// every CTA of the cluster after it, with no device-wide fence. The `.aligned` forms need
// converged warps; callers may come straight from divergent loops.
__device__ __forceinline__ void cluster_sync() {
  __syncwarp();
  asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
// A cluster barrier that orders no memory (a relaxed arrive: no fence before it), for where
// nothing written before it is read in another CTA after it.
__device__ __forceinline__ void cluster_sync_relaxed() {
  __syncwarp();
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
// The DSMEM address of this CTA's shared word `p` in cluster CTA `rank`.
__device__ __forceinline__ u32 dsmem(const void* p, u32 rank) {
  u32 a;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(a) : "r"((u32)__cvta_generic_to_shared(p)), "r"(rank));
  return a;
}
__device__ __forceinline__ u32 dsmem_load(u32 a) {
  u32 v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ void dsmem_store(u32 a, u32 v) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
}
__device__ __forceinline__ u32 dsmem_add(u32 a, u32 v) {
  u32 old;
  asm volatile("atom.shared::cluster.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(a), "r"(v) : "memory");
  return old;
}

// The cluster's coarse histogram, summed in every CTA: each CTA's s_hist holds its own counts on
// entry (a block barrier after its last update) and the cluster's sums on return (a block
// barrier after), with its own counts of bins tid + i * THREADS left in own[i]. Each CTA first
// sums one slice of the bins over every CTA into its frontier buffer 1 (free until the
// refinement, after later cluster barriers), then gathers every slice: a CTA takes in
// 2 * COARSE_BINS words through DSMEM instead of one CTA taking in every CTA's histogram, and
// every CTA can find the boundary itself. Two cluster barriers (the first: every histogram is
// complete; the second: every slice is summed and no CTA reads another's own counts any more).
static_assert(COARSE_BINS % CLUSTER_CTAS == 0, "the coarse bins split into one slice per CTA");
constexpr int HIST_SLICE = COARSE_BINS / CLUSTER_CTAS;
static_assert(HIST_SLICE <= 2 * CAP1, "a slice of summed bins fits frontier buffer 1");
__device__ __forceinline__ int* s_hist_slice() { return reinterpret_cast<int*>(s_keys(1)); }
__device__ __forceinline__ void cluster_sum_hist(u32 rank, u32 (&own)[COARSE_PER_THREAD]) {
  cluster_sync();
  for (int j = threadIdx.x; j < HIST_SLICE; j += THREADS) {
    const int bin = (int)rank * HIST_SLICE + j;
    u32 part[CLUSTER_CTAS];
#pragma unroll
    for (u32 r = 0; r < CLUSTER_CTAS; ++r)
      part[r] = r == rank ? (u32)s_hist()[bin] : dsmem_load(dsmem(&s_hist()[bin], r));
    u32 sum = 0u;
#pragma unroll
    for (u32 r = 0; r < CLUSTER_CTAS; ++r) sum += part[r];
    s_hist_slice()[j] = (int)sum;
  }
#pragma unroll
  for (int i = 0; i < COARSE_PER_THREAD; ++i) {
    const int bin = threadIdx.x + i * THREADS;
    own[i] = bin < COARSE_BINS ? (u32)s_hist()[bin] : 0u;
  }
  cluster_sync();
#pragma unroll
  for (int i = 0; i < COARSE_PER_THREAD; ++i) {
    const int bin = threadIdx.x + i * THREADS;
    if (bin < COARSE_BINS) {
      const u32 from = (u32)(bin / HIST_SLICE);
      const int j = bin % HIST_SLICE;
      s_hist()[bin] = from == rank ? s_hist_slice()[j] : (int)dsmem_load(dsmem(&s_hist_slice()[j], from));
    }
  }
  __syncthreads();
}

// This CTA's first output slot and first frontier slot of rank 0: the counts of its scores
// above the boundary bin `bin` (its own bins before `bin`, own[i] for bin tid + i * THREADS) and
// in that bin, each reserved at once in rank 0's committed and frontier counts, so the pass that
// follows takes slots from counters in its own shared memory instead of one remote atomic per
// score on a word every CTA shares. Every thread calls; C_CTA_SLOTS and C_CTA_TIES are zero on
// entry and count the slots taken from the returned bases on.
struct CtaSlots {
  int out;    // first output slot
  int ties;   // first frontier slot
};
__device__ __forceinline__ CtaSlots reserve_cta_slots(const u32 (&own)[COARSE_PER_THREAD], int bin,
                                                      u32 out_at, u32 count_at) {
  u32 above = 0u, at = 0u;
#pragma unroll
  for (int i = 0; i < COARSE_PER_THREAD; ++i) {
    const int b = (int)threadIdx.x + i * THREADS;
    if (b < bin) above += own[i];
    else if (b == bin) at = own[i];
  }
  above = __reduce_add_sync(FULL_MASK, above);
  at = __reduce_add_sync(FULL_MASK, at);
  if ((threadIdx.x & 31) == 0 && above) atomicAdd(s_counter(C_CTA_SLOTS), (int)above);
  if ((threadIdx.x & 31) == 0 && at) atomicAdd(s_counter(C_CTA_TIES), (int)at);
  __syncthreads();
  if (threadIdx.x == 0) {
    const u32 n_out = (u32)*s_counter(C_CTA_SLOTS), n_ties = (u32)*s_counter(C_CTA_TIES);
    s_scratch()[SCRATCH_CTA_BASE] = n_out ? (int)dsmem_add(out_at, n_out) : 0;
    s_scratch()[SCRATCH_CTA_TIE_BASE] = n_ties ? (int)dsmem_add(count_at, n_ties) : 0;
    *s_counter(C_CTA_SLOTS) = 0;
    *s_counter(C_CTA_TIES) = 0;
  }
  __syncthreads();
  return CtaSlots{s_scratch()[SCRATCH_CTA_BASE], s_scratch()[SCRATCH_CTA_TIE_BASE]};
}

// Puts (key, idx) at position `pos` of rank 0's frontier: its shared buffer 0 through DSMEM,
// continuing in its global spill slice.
__device__ __forceinline__ void put_at_rank0(int pos, u32 keys0, u32 idx0, u32 key, int idx,
                                             const RowCtx& c) {
  if (pos < CAP0) {
    dsmem_store(keys0 + 4u * (u32)pos, key);
    dsmem_store(idx0 + 4u * (u32)pos, (u32)idx);
  } else if (pos - CAP0 < c.spill_cap) {
    int* g = c.spill + (pos - CAP0);
    g[0] = (int)key;
    g[c.spill_cap] = idx;
  }
}

// Appends (key, idx) to rank 0's frontier (put_at_rank0 at a slot of its count).
__device__ __forceinline__ void append_to_rank0(u32 count_at, u32 keys0, u32 idx0, u32 key, int idx,
                                                const RowCtx& c) {
  put_at_rank0((int)dsmem_add(count_at, 1u), keys0, idx0, key, idx, c);
}

// The exact route's segment stage: STAGE_CAP scores of this CTA's segment, written by the
// histogram pass and read by the commit pass, so a segment that fits is read from memory once.
static_assert(STAGE_AT % 4 == 0, "the segment stage is read as 16-byte vectors");
__device__ __forceinline__ float* s_stage() { return reinterpret_cast<float*>(smem_words + STAGE_AT); }

// Calls f(x, i) for the `len` staged scores, i their position in the segment, in no particular
// order (16-byte reads of four, then the last len % 4 one each).
template <class F>
__device__ __forceinline__ void each_staged(int len, F&& f) {
  const float4* v4 = reinterpret_cast<const float4*>(s_stage());
  const int n4 = len >> 2;
  for (int j = threadIdx.x; j < n4; j += THREADS) {
    const float4 v = v4[j];
    f(v.x, 4 * j);
    f(v.y, 4 * j + 1);
    f(v.z, 4 * j + 2);
    f(v.w, 4 * j + 3);
  }
  const int i = 4 * n4 + (int)threadIdx.x;
  if (i < len) f(s_stage()[i], i);
}

// Reports a NaN seen by any thread of this CTA.
__device__ __forceinline__ void report_nan(bool nan, u32* __restrict__ control) {
  if (__syncthreads_or(nan ? 1 : 0) && threadIdx.x == 0) atomicOr(control + CONTROL_STATUS, STATUS_NAN);
}

// Every CTA sends its segment's scores in [lo, hi) (hi NaN: no upper bound) to rank 0's
// frontier; returns rank 0's frontier count, the same in every CTA (certificate, eq. 16).
__device__ int cluster_collect_band(const score_t* __restrict__ seg, int len, int a, float lo, float hi,
                                    const RowCtx& c, u32* __restrict__ control) {
  const u32 count_at = dsmem(s_counter(C_COUNT), 0);
  const u32 keys0 = dsmem(s_keys(0), 0);
  const u32 idx0 = dsmem(s_idx(0), 0);
  u32 nan = 0u;
  if (len > 0) {
    stream_row(seg, len, [&](float x, int i) {
      if (!(x < lo)) {
        if (x != x) nan = 1u;
        else if (!(x >= hi)) append_to_rank0(count_at, keys0, idx0, desc_key32(x), a + i, c);
      }
    });
  }
  report_nan(nan, control);
  cluster_sync();
  const int n = (int)dsmem_load(count_at);
  cluster_sync();  // every CTA has read the count before any appends again
  return n;
}

// The sampled routes of one row (select_row's, with the work spread over the cluster). Returns
// ROUTE_PRIMARY or ROUTE_RESCUE with `lo` set, else ROUTE_RECOVERY or ROUTE_DIRECT_EXACT for the
// exact path to follow.
__device__ int cluster_sampled_row(const score_t* __restrict__ row_ptr, int L, int a, int b, int phase,
                                   u32 rank, const RowCtx& c, u32* __restrict__ control, float& lo) {
  if (view_samples(L, phase) < MIN_VIEW) return ROUTE_DIRECT_EXACT;
  clear_hist(COARSE_BINS);
  if (rank == 0) reset_row_counters();  // before the barriers that precede any append
  __syncthreads();
  const int2 span = view_span(L, phase, a, b);
  view_hist(row_ptr, L, phase, span.x, span.y);
  __syncthreads();
  u32 own[COARSE_PER_THREAD];
  cluster_sum_hist(rank, own);
  // Every CTA proposes from the same sums: the same endpoints everywhere.
  const ProposalResult p = proposal_from_hist(false);
  const float e0 = p.e0, e1 = p.e1;
  const int admitted = cluster_collect_band(row_ptr + a, b - a, a, e0, quiet_nan(), c, control);
  lo = e0;
  return sampled_route(admitted, [&] {
    // Band rescue (eq. 18-19): only the scores between the two endpoints are appended.
    lo = e1;
    return cluster_collect_band(row_ptr + a, b - a, a, e1, e0, c, control);
  });
}

#ifdef CALL_PRIOR
// prior=P/R over the cluster (select.cu's prior_route, the CPU backend's cpu::prior): every CTA
// sends its segment's scores down to PRIOR_PRIMARY_BINS coarse bins below the row's prior to
// rank 0's frontier, then the band down to PRIOR_RESCUE_BINS; certified when at least K and at
// most PRIOR_CAP are admitted. Returns the route with `lo` set, or ROUTE_DIRECT_EXACT when the
// row has no prior or it did not certify: the spec's own routes then start over (each resets
// rank 0's counters before it collects).
__device__ int cluster_prior_row(const score_t* __restrict__ row_ptr, int a, int b, u32 rank,
                                 const RowCtx& c, u32* __restrict__ control, float& lo) {
  const float p = s_row_io.prior;  // every CTA read the row's prior (begin_call_row)
  if (p != p) return ROUTE_DIRECT_EXACT;
  const u32 last = (u32)COARSE_BINS - 1u;
  const u32 bin = min(coarse_bin(p), last);
  const float e0 = coarse_endpoint_fast(min(bin + (u32)PRIOR_PRIMARY_BINS, last));
  if (rank == 0) reset_row_counters();
  cluster_sync();
  int admitted = cluster_collect_band(row_ptr + a, b - a, a, e0, quiet_nan(), c, control);
  int route = ROUTE_PRIOR_PRIMARY;
  lo = e0;
  if (admitted < K && PRIOR_RESCUE_BINS > PRIOR_PRIMARY_BINS) {
    const float e1 = coarse_endpoint_fast(min(bin + (u32)PRIOR_RESCUE_BINS, last));
    admitted = cluster_collect_band(row_ptr + a, b - a, a, e1, e0, c, control);
    lo = e1;
    route = ROUTE_PRIOR_RESCUE;
  }
  return admitted >= K && admitted <= PRIOR_CAP ? route : ROUTE_DIRECT_EXACT;
}
#endif

extern "C" __global__ void __cluster_dims__(CLUSTER_CTAS, 1, 1) __launch_bounds__(THREADS, MIN_BLOCKS)
ENTRY(ENTRY_PARAMS) {
  const u32 rank = cluster_rank();
  int m = *live_rows;
  if (m > m_cap || m < 0) {
    if (threadIdx.x == 0 && blockIdx.x == 0) atomicOr(control + CONTROL_STATUS, STATUS_BAD_ROWS);
    m = m < 0 ? 0 : m_cap;
  }
  // Rank 0's spill slice continues the shared frontier for the whole cluster.
  RowCtx c;
  c.spill = spill + (long long)(blockIdx.x - rank) * 4 * spill_cap;
  c.spill_cap = spill_cap;
  c.nan = false;
#if CALL_IO
  const CallArgs call = CALL_ARGS;
#endif
  for (int row = (int)cluster_index(); row < m; row += (int)cluster_count()) {
#if CALL_IO
    const RowSpan span =
        begin_call_row(call, scores, pitch, row, width, out_pitch, control + CONTROL_STATUS);
    const int L = span.L;
    const score_t* row_ptr = scores + (long long)row * pitch + span.start;
#else
    const int L = checked_length(lengths, row, width, control);
    const score_t* row_ptr = scores + (long long)row * pitch;
#endif
    int* out_row = out + (long long)row * out_pitch;
    PROBE_ROW_START();
    if (L <= K) {
      if (rank == 0) {
#if CALL_IO
        bool nan = false;
        put_short_row(out_row, L, nan);
        report_nan(nan, control);
        finish_call_row(out_row, L);
#else
        for (int i = threadIdx.x; i < K; i += THREADS) out_row[i] = i < L ? i : -1;
#endif
        if (threadIdx.x == 0 && row_info) { row_info[2 * row] = ROUTE_SHORT; row_info[2 * row + 1] = 0; }
      }
      continue;
    }
    const int seg = (((L + CLUSTER_CTAS - 1) / CLUSTER_CTAS) + 3) & ~3;
    const int a = min(L, (int)rank * seg);
    const int b = min(L, a + seg);
    int route = ROUTE_DIRECT_EXACT;
    float lo = 0.0f, hi = quiet_nan();
    int quota = K;
#ifdef CALL_PRIOR
    route = cluster_prior_row(row_ptr, a, b, rank, c, control, lo);
    if (SAMPLED && route == ROUTE_DIRECT_EXACT) {
#else
    if (SAMPLED) {
#endif
      const int phase = view_phase(row);
      route = cluster_sampled_row(row_ptr, L, a, b, phase, rank, c, control, lo);
      PROBE_MARK(PROBE_PROPOSED);
    }
    if (route == ROUTE_RECOVERY || route == ROUTE_DIRECT_EXACT) {
      // 1. This segment's coarse histogram; rank 0's counters zeroed before the barriers that
      // precede the reservations.
      clear_hist(COARSE_BINS);
      if (rank == 0) reset_row_counters();
      __syncthreads();
      u32 nan = 0u;
      const bool staged = b - a <= STAGE_CAP;
      if (b > a) {
        stream_row(row_ptr + a, b - a, [&](float x, int i) {
          nan |= x != x ? 1u : 0u;
          atomicAdd(&s_hist()[coarse_bin(x)], 1);
          if (STAGE_CAP > 0 && staged) s_stage()[i] = x;
        });
      }
      report_nan(nan, control);
      // 2. Every CTA sums the histograms and finds tau* (eq. 20) itself; each keeps its own counts.
      u32 own[COARSE_PER_THREAD];
      cluster_sum_hist(rank, own);
      const Boundary bd = find_boundary<COARSE_BINS>(K);
      if (threadIdx.x == 0) *s_counter(C_CTA_SLOTS) = *s_counter(C_CTA_TIES) = 0;
      coarse_endpoints_to_scratch(bd.bin, bd.bin - 1);  // its block barrier orders the zeroing
      quota = K - bd.before;
      PROBE_MARK(PROBE_PROPOSED);
      // 3. Every CTA commits its scores above the boundary bin, in slots it reserved at once, and
      // sends the bin's scores to rank 0's frontier.
      lo = __int_as_float(s_scratch()[SCRATCH_F0]);
      hi = __int_as_float(s_scratch()[SCRATCH_F1]);
      const u32 out_at = dsmem(s_counter(C_OUT), 0);
      const u32 count_at = dsmem(s_counter(C_COUNT), 0);
      const u32 keys0 = dsmem(s_keys(0), 0);
      const u32 idx0 = dsmem(s_idx(0), 0);
      const CtaSlots base = reserve_cta_slots(own, bd.bin, out_at, count_at);
      const auto commit = [&](float x, int i) {
        if (x >= lo) {
          if (x >= hi) put_selected(out_row, base.out + atomicAdd(s_counter(C_CTA_SLOTS), 1), a + i, x);
          else put_at_rank0(base.ties + atomicAdd(s_counter(C_CTA_TIES), 1), keys0, idx0, desc_key32(x), a + i, c);
        }
      };
      if (STAGE_CAP > 0 && staged) each_staged(b - a, commit);
      else if (b > a) stream_row(row_ptr + a, b - a, commit);
      cluster_sync();
    }
    PROBE_MARK(PROBE_FRONTIER);
    // 4. Rank 0 refines the merged frontier (re-reading the row if it overflowed).
    if (rank == 0) {
      GlobalRow src;
      src.p = row_ptr;
      src.L = L;
      int q0 = *s_counter(C_COUNT);
      clear_hist(HIST_BINS);
      __syncthreads();
      refine_frontier(src, lo, hi, quiet_nan(), quota, c, out_row);
#if CALL_IO
      finish_call_row(out_row, L);
#endif
      route = PROBE_ROW_END(route, q0);
      finish_row(c, row, route, q0, control, row_info);
    }
  }
  // No CTA leaves while another may still read its shared memory (nothing is published here,
  // so the barrier orders no memory: no fence before it).
  cluster_sync_relaxed();
}

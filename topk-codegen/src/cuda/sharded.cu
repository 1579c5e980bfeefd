// ---- Context parallelism: this rank's share of rows whose positions are sharded over ranks. ----
// Rank `rank` holds global positions [offset, offset + shard_width) of every row; `lengths`
// are the global valid lengths. One entry point runs one stage over every live row; the host
// runs the stages in order and all-reduces (sum) a workspace region across the ranks between
// them, so every rank derives the same boundaries (the selector's proposal, certificate and
// radix digits are all sums over positions). Stages over positions use a (chunk, row) grid;
// the per-row stages after an all-reduce use one CTA per row.
//
// Workspace (u32 words, regions in this order; all but the candidates zeroed per call):
//   sample   m_cap x COARSE_BINS   view histogram            (all-reduced)
//   counts   m_cap x 2             C(e0), C(e1)              (all-reduced)
//   digits   NUM_DIGITS x m_cap x HIST_BINS                  (all-reduced, one per digit)
//   ranks    m_cap x ranks x 2     per-rank (above, ties)    (all-reduced: an all-gather)
//   staged   m_cap x K             output slots              (all-reduced: one writer each)
//   state    m_cap x RS_WORDS      per-row boundaries        (local, same on every rank)
//   local    m_cap x CURSOR_WORDS  candidate / emit cursors  (local)
//   status   STATUS_WORDS
//   cands    m_cap x 2 x CANDS     local (key, position) candidates
// The stage codes (STAGE_*) and the word counts come from the prelude (topk_codegen::interface).

#define RS_FLAGS 0   // ACTIVE | USABLE | IN_BUFFER
#define RS_E0 1      // FP32 bits of the primary endpoint
#define RS_E1 2      // FP32 bits of the rescue endpoint
#define RS_ROUTE 3
#define RS_LO_KEY 4  // frontier: keys <= lo_key (0xffffffff: every valid score)
#define RS_PREFIX 5  // radix prefix found so far; the full threshold key after the last digit
#define RS_QUOTA 6   // slots still to fill inside the current prefix group (of RS_WORDS)
#define RS_POS 7     // ties=lowest: the position prefix; the last tie's position after the last digit
#define ROW_ACTIVE 1u
#define ROW_USABLE 2u
#define ROW_IN_BUFFER 4u

struct ShardWs {
  u32* sample;
  u32* counts;
  u32* digits;
  u32* ranks;
  u32* staged;
  u32* state;
  u32* local;
  u32* status;
  u32* cand_keys;
  int* cand_pos;
};

// DIGIT_REGIONS (the prelude): the digit stages' histograms, the key's digits and with
// ties=lowest then the digits of the boundary key's positions (the composite key (key, position)
// is a total order).
#if CALL_IO
// Whether a score with key `key` at global position `gpos` is one of the ties that complete its
// row: any with the threshold key `t` (the emit stage takes as many as are needed); with
// ties=lowest, only those up to the last tie's position.
__device__ __forceinline__ bool completing_tie(u32 key, u32 t, int gpos, const u32* st) {
  if constexpr (LOWEST_TIES) return key == t && (u32)gpos <= st[RS_POS];
  return key == t;
}
#endif

__device__ __forceinline__ ShardWs shard_ws(u32* ws, int m_cap, int ranks) {
  ShardWs w;
  const long long m = m_cap;
  w.sample = ws;
  w.counts = w.sample + m * COARSE_BINS;
  w.digits = w.counts + m * 2;
  w.ranks = w.digits + (long long)DIGIT_REGIONS * m * HIST_BINS;
  w.staged = w.ranks + m * ranks * 2;
  w.state = w.staged + m * K;
  w.local = w.state + m * RS_WORDS;
  w.status = w.local + m * CURSOR_WORDS;
  w.cand_keys = w.status + STATUS_WORDS;
  w.cand_pos = reinterpret_cast<int*>(w.cand_keys + m * CANDS);
  return w;
}

// Adds a shared histogram's nonzero bins into a global one.
__device__ __forceinline__ void flush_hist(u32* __restrict__ g, int bins) {
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += THREADS) {
    const int v = s_hist()[b];
    if (v) atomicAdd(g + b, (u32)v);
  }
}

__device__ __forceinline__ void load_hist(const u32* __restrict__ g, int bins) {
  for (int b = threadIdx.x; b < bins; b += THREADS) s_hist()[b] = (int)g[b];
  __syncthreads();
}

// Block sum of two per-thread counts, added to g[0], g[1] by one thread.
__device__ __forceinline__ void add_block_counts(int a, int b, u32* g) {
  if (threadIdx.x == 0) { *s_counter(C_COUNT) = 0; *s_counter(C_NEXT) = 0; }
  __syncthreads();
  if (a) atomicAdd(s_counter(C_COUNT), a);
  if (b) atomicAdd(s_counter(C_NEXT), b);
  __syncthreads();
  if (threadIdx.x == 0) {
    const int sa = *s_counter(C_COUNT), sb = *s_counter(C_NEXT);
    if (sa) atomicAdd(g, (u32)sa);
    if (sb) atomicAdd(g + 1, (u32)sb);
  }
}

// Whether this CTA has a share of the row's current source: a frontier that fits the candidate
// buffer (a few thousand pairs) is the first chunk's alone, so the other CTAs of the row skip
// the histogram setup and flush entirely.
__device__ __forceinline__ bool owns_source(const u32* st) {
  return !(st[RS_FLAGS] & ROW_IN_BUFFER) || blockIdx.x == 0;
}

// Calls f(key, local position) for every score of the row's current source that this CTA owns:
// the whole candidate buffer (first chunk) when the frontier fits it, else its chunk of the
// local shard.
template <class F>
__device__ __forceinline__ void for_each_source(const score_t* __restrict__ row, int lo, int hi,
                                                const u32* st, const u32* keys, const int* pos,
                                                int n_cands, F&& f) {
  if (st[RS_FLAGS] & ROW_IN_BUFFER) {
    if (blockIdx.x == 0)
      for (int p = threadIdx.x; p < n_cands; p += THREADS) f(keys[p], pos[p]);
  } else if (hi > lo) {
    stream_row(row + lo, hi - lo, [&](float x, int i) { f(desc_key32(x), lo + i); });
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
ENTRY(ENTRY_PARAMS) {
  const ShardWs w = shard_ws(ws, m_cap, ranks);
#if CALL_IO
  const CallArgs call = CALL_ARGS;
#endif
  int m = *live_rows;
  if (m > m_cap || m < 0) {
    if (stage == STAGE_SAMPLE && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0)
      atomicOr(w.status, STATUS_BAD_ROWS);
    m = m < 0 ? 0 : m_cap;
  }
  for (int row = blockIdx.y; row < m; row += gridDim.y) {
#if CALL_IO
    // One rank (map=staged): the window is the row; its start moves the row's scores.
    const bool report = stage == STAGE_SAMPLE && blockIdx.x == 0;
    RowSpan span = call_row_span(call, row, total_width, w.status, report);
    if (!transform_fits(call, row, span)) {
      if (report && threadIdx.x == 0) atomicOr(w.status, STATUS_BAD_TRANSFORM);
      span.L = 0;
    }
    const int L = span.L;
#else
    int L = lengths[row];
    if (L < 0 || L > total_width) {
      if (stage == STAGE_SAMPLE && threadIdx.x == 0 && blockIdx.x == 0) atomicOr(w.status, STATUS_BAD_LENGTH);
      L = 0;
    }
#endif
    const int local_len = max(0, min(L - offset, shard_width));
    const int lo = min(local_len, blockIdx.x * chunk_len);
    const int hi = min(local_len, lo + chunk_len);
#if CALL_IO
    const score_t* row_ptr = scores + (long long)row * pitch + span.start;
#else
    const score_t* row_ptr = scores + (long long)row * pitch;
#endif
    u32* st = w.state + (long long)row * RS_WORDS;
    u32* cur = w.local + (long long)row * CURSOR_WORDS;
    u32* keys = w.cand_keys + (long long)row * CANDS;
    int* pos = w.cand_pos + (long long)row * CANDS;
    const int phase = view_phase(row);
    const int view = L > phase ? (L - phase - 1) / STRIDE + 1 : 0;
    const bool active = L > K;
    const bool usable = active && SAMPLED && view >= MIN_VIEW;

    if (stage == STAGE_SAMPLE) {
      if (!usable) continue;
      clear_hist(COARSE_BINS);
      __syncthreads();
      // View positions p = phase + t * STRIDE with offset + lo <= p < offset + hi.
      const int g_lo = offset + lo, g_hi = offset + hi;
      const int t0 = g_lo > phase ? (g_lo - phase + STRIDE - 1) / STRIDE : 0;
      const int t1 = g_hi > phase ? (g_hi - phase + STRIDE - 1) / STRIDE : 0;
      // VIEW_BATCH independent loads in flight per thread, then their bins.
      for (int base = t0; base < t1; base += THREADS * VIEW_BATCH) {
        float v[VIEW_BATCH];
#pragma unroll
        for (int u = 0; u < VIEW_BATCH; ++u) {
          const int t = base + u * THREADS + threadIdx.x;
          v[u] = t < t1 ? load_cg(row_ptr + (phase + (long long)t * STRIDE - offset)) : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < VIEW_BATCH; ++u)
          if (base + u * THREADS + (int)threadIdx.x < t1) atomicAdd(&s_hist()[coarse_bin(v[u])], 1);
      }
      flush_hist(w.sample + (long long)row * COARSE_BINS, COARSE_BINS);
      __syncthreads();
    } else if (stage == STAGE_PROPOSAL) {
      if (blockIdx.x != 0) continue;
      u32 e0 = 0u, e1 = 0u;
      if (usable) {
        load_hist(w.sample + (long long)row * COARSE_BINS, COARSE_BINS);
        const Boundary b0 = find_boundary<COARSE_BINS>(SAMPLE_RANK);
        const Boundary b1 = RESCUE ? find_boundary<COARSE_BINS>(RESCUE_RANK) : b0;
        e0 = __float_as_uint(coarse_endpoint_fast((u32)b0.bin));
        e1 = __float_as_uint(coarse_endpoint_fast((u32)b1.bin));
      }
      if (threadIdx.x == 0) {
        st[RS_FLAGS] = (active ? ROW_ACTIVE : 0u) | (usable ? ROW_USABLE : 0u);
        st[RS_E0] = e0;
        st[RS_E1] = e1;
      }
    } else if (stage == STAGE_CERTIFY) {
      if (!active) continue;
      // Scores at or above the lower (rescue) endpoint are kept, so a rescued row refines
      // from the buffer too (a re-read costs a full pass over the row); NaN is reported
      // (outside the contract). Without a usable view every score is kept.
      const float e0 = __uint_as_float(st[RS_E0]);
      const float e1 = __uint_as_float(st[RS_E1]);
      const float keep = usable ? (RESCUE ? e1 : e0) : -__int_as_float(0x7f800000);
      int c0 = 0, c1 = 0;
      bool nan = false;
      // Admitted pairs are staged in shared memory (frontier buffer 0) and copied out with one
      // global reservation per CTA; past CAP they go to the global buffer one by one.
      // Without a usable view every score is a candidate: a shard longer than the buffer
      // is marked overflowed up front (later passes re-read it) instead of counted one by one.
      const bool collect = usable || local_len <= CANDS;
      if (threadIdx.x == 0) *s_counter(C_COUNT) = 0;
      if (!collect && threadIdx.x == 0 && blockIdx.x == 0) cur[0] = (u32)CANDS + 1u;
      __syncthreads();
      if (hi > lo) {
        stream_row(row_ptr + lo, hi - lo, [&](float x, int i) {
          c0 += x >= e0;
          c1 += x >= e1;
          if (collect && x >= keep) {
            const int p = atomicAdd(s_counter(C_COUNT), 1);
            if (p < CAP) {
              s_keys(0)[p] = desc_key32(x);
              s_idx(0)[p] = lo + i;
            } else {
              const u32 g = atomicAdd(cur, 1u);
              if (g < (u32)CANDS) { keys[g] = desc_key32(x); pos[g] = lo + i; }
            }
          } else if (x != x) {
            nan = true;
          }
        });
      }
      __syncthreads();
      const int staged = min(*s_counter(C_COUNT), CAP);
      if (threadIdx.x == 0) s_scratch()[SCRATCH_BIN] = staged ? (int)atomicAdd(cur, (u32)staged) : 0;
      __syncthreads();
      const u32 base = (u32)s_scratch()[SCRATCH_BIN];
      for (int j = threadIdx.x; j < staged; j += THREADS) {
        if (base + (u32)j < (u32)CANDS) { keys[base + j] = s_keys(0)[j]; pos[base + j] = s_idx(0)[j]; }
      }
      if (__syncthreads_or(nan ? 1 : 0) && threadIdx.x == 0) atomicOr(w.status, STATUS_NAN);
      if (usable) add_block_counts(c0, c1, w.counts + 2 * (long long)row);
      __syncthreads();
    } else if (stage == STAGE_ROUTE) {
      if (blockIdx.x != 0 || threadIdx.x != 0) continue;
      if (!active) {
        if (row_info) { row_info[2 * row] = ROUTE_SHORT; row_info[2 * row + 1] = 0; }
        continue;
      }
      const u32 C0 = w.counts[2 * (long long)row], C1 = w.counts[2 * (long long)row + 1];
      // sampled_route's decision (row.cu), written out with each route's frontier: deciding
      // first and choosing the frontier after changes how NVRTC compiles this kernel.
      int route;
      u32 lo_key = 0xffffffffu;
      int q0 = L;
      if (!usable) {
        route = ROUTE_DIRECT_EXACT;
      } else if (C0 >= (u32)K) {
        route = ROUTE_PRIMARY;
        lo_key = desc_key32(__uint_as_float(st[RS_E0]));
        q0 = (int)C0;
      } else if (RESCUE && C1 >= (u32)K) {
        route = ROUTE_RESCUE;
        lo_key = desc_key32(__uint_as_float(st[RS_E1]));
        q0 = (int)C1;
      } else {
        route = ROUTE_RECOVERY;
      }
      // The candidate buffer holds the frontier unless it overflowed or recovery widened the
      // frontier to every score (then each pass re-reads the shard).
      const bool in_buffer = route != ROUTE_RECOVERY && cur[0] <= (u32)CANDS;
      st[RS_FLAGS] |= in_buffer ? ROW_IN_BUFFER : 0u;
      st[RS_ROUTE] = (u32)route;
      st[RS_LO_KEY] = lo_key;
      st[RS_PREFIX] = 0u;
      st[RS_QUOTA] = (u32)K;
      if (row_info) { row_info[2 * row] = route; row_info[2 * row + 1] = q0; }
    } else if (stage == STAGE_DIGIT) {
      if (!active || !owns_source(st)) continue;
      clear_hist(HIST_BINS);
      __syncthreads();
      const u32 lo_key = st[RS_LO_KEY], prefix = st[RS_PREFIX];
      const int n = (int)min(cur[0], (u32)CANDS);
#if CALL_IO
      if (LOWEST_TIES && digit >= NUM_DIGITS) {
        // The boundary key's positions (global), one digit a stage.
        const int pd = digit - NUM_DIGITS;
        const u32 pos_prefix = st[RS_POS];
        auto count_tie = [&](u32 key, int p) {
          const u32 g = (u32)(offset + p);
          if (key == prefix && (pd == 0 || (g >> digit_shift(pd - 1)) == pos_prefix))
            atomicAdd(&s_hist()[digit_of(g, pd)], 1);
        };
        if (st[RS_FLAGS] & ROW_IN_BUFFER) {
          if (blockIdx.x == 0)
            for (int p = threadIdx.x; p < n; p += THREADS) count_tie(keys[p], pos[p]);
        } else {
          for_each_source(row_ptr, lo, hi, st, keys, pos, n, count_tie);
        }
        flush_hist(w.digits + ((long long)digit * m_cap + row) * HIST_BINS, HIST_BINS);
        __syncthreads();
        continue;
      }
#endif
      auto in_group = [&](u32 key) {
        return key <= lo_key && (digit == 0 || (key >> digit_shift(digit - 1)) == prefix);
      };
      if (st[RS_FLAGS] & ROW_IN_BUFFER) {
        // Candidates share a few leading digits: one shared atomic per distinct bin per warp.
        for (int base = 0; base < n; base += THREADS) {
          const int p = base + threadIdx.x;
          const bool take = p < n && in_group(keys[p]);
          const u32 bin = take ? digit_of(keys[p], digit) : 0xffffffffu;
          const u32 peers = __match_any_sync(FULL_MASK, bin);
          if (take && (threadIdx.x & 31) == __ffs(peers) - 1)
            atomicAdd(&s_hist()[bin], __popc(peers));
        }
      } else {
        for_each_source(row_ptr, lo, hi, st, keys, pos, n, [&](u32 key, int) {
          if (in_group(key)) atomicAdd(&s_hist()[digit_of(key, digit)], 1);
        });
      }
      flush_hist(w.digits + ((long long)digit * m_cap + row) * HIST_BINS, HIST_BINS);
      __syncthreads();
    } else if (stage == STAGE_BOUNDARY) {
      if (blockIdx.x != 0 || !active) continue;
      load_hist(w.digits + ((long long)digit * m_cap + row) * HIST_BINS, HIST_BINS);
      const Boundary b = find_boundary<HIST_BINS>((int)st[RS_QUOTA]);
#if CALL_IO
      if (LOWEST_TIES && digit >= NUM_DIGITS) {
        if (threadIdx.x == 0) {
          const int pd = digit - NUM_DIGITS;
          const u32 pos_prefix = st[RS_POS];
          st[RS_POS] = pd == 0 ? (u32)b.bin : ((pos_prefix << digit_width(pd)) | (u32)b.bin);
          st[RS_QUOTA] = st[RS_QUOTA] - (u32)b.before;
        }
        continue;
      }
#endif
      if (threadIdx.x == 0) {
        const u32 prefix = st[RS_PREFIX];
        st[RS_PREFIX] = digit == 0 ? (u32)b.bin : ((prefix << digit_width(digit)) | (u32)b.bin);
        st[RS_QUOTA] = st[RS_QUOTA] - (u32)b.before;
      }
    } else if (stage == STAGE_COUNT) {
      if (!active || !owns_source(st)) continue;
      // Keys below the threshold are all inside the frontier (the threshold is a frontier key).
      const u32 t = st[RS_PREFIX];
      const int n = (int)min(cur[0], (u32)CANDS);
      int above = 0, ties = 0;
#if CALL_IO
      for_each_source(row_ptr, lo, hi, st, keys, pos, n, [&](u32 key, int p) {
        above += key < t;
        ties += completing_tie(key, t, offset + p, st);
      });
#else
      for_each_source(row_ptr, lo, hi, st, keys, pos, n, [&](u32 key, int) {
        above += key < t;
        ties += key == t;
      });
#endif
      add_block_counts(above, ties, w.ranks + ((long long)row * ranks + rank) * 2);
      __syncthreads();
    } else if (stage == STAGE_EMIT) {
      u32* slots = w.staged + (long long)row * K;
      if (!active) {
        // Short row: every valid position, then -1 padding (written once, by rank 0).
        for (int i = lo + threadIdx.x; i < hi; i += THREADS) slots[offset + i] = (u32)(offset + i);
        if (rank == 0 && blockIdx.x == 0)
          for (int i = L + threadIdx.x; i < K; i += THREADS) slots[i] = 0xffffffffu;
        continue;
      }
      if (!owns_source(st)) continue;
      const u32 t = st[RS_PREFIX];
#if CALL_IO
      // With ties=lowest the position digits spent the quota: the ties that complete the row
      // are the slots the scores above the threshold leave.
      int need = (int)st[RS_QUOTA];
      if constexpr (LOWEST_TIES) {
        need = K;
        for (int q = 0; q < ranks; ++q) need -= (int)w.ranks[((long long)row * ranks + q) * 2];
      }
#else
      const int need = (int)st[RS_QUOTA];  // ties that complete the row
#endif
      int above_before = 0, ties_before = 0;
      for (int q = 0; q < rank; ++q) {
        above_before += (int)w.ranks[((long long)row * ranks + q) * 2];
        ties_before += (int)w.ranks[((long long)row * ranks + q) * 2 + 1];
      }
      const int n = (int)min(cur[0], (u32)CANDS);
      if (st[RS_FLAGS] & ROW_IN_BUFFER) {
        // One CTA owns the buffer: warp-aggregated slots from shared cursors.
        if (threadIdx.x == 0) { *s_counter(C_OUT) = 0; *s_counter(C_TIES) = 0; }
        __syncthreads();
        for (int base = 0; base < n; base += THREADS) {
          const int p = base + threadIdx.x;
          const u32 key = p < n ? keys[p] : 0xffffffffu;
#if CALL_IO
          const bool above = p < n && key < t;
          const bool tie = p < n && completing_tie(key, t, offset + (p < n ? pos[p] : 0), st);
#else
          const bool above = p < n && key < t, tie = p < n && key == t;
#endif
          const int a = warp_reserve(above, s_counter(C_OUT));
          if (above) slots[above_before + a] = (u32)(offset + pos[p]);
          const int b = ties_before + warp_reserve(tie, s_counter(C_TIES));
          if (tie && b < need) slots[K - need + b] = (u32)(offset + pos[p]);
        }
        __syncthreads();
      } else {
        for_each_source(row_ptr, lo, hi, st, keys, pos, n, [&](u32 key, int i) {
          if (key < t) {
            slots[above_before + (int)atomicAdd(cur + 1, 1u)] = (u32)(offset + i);
#if CALL_IO
          } else if (completing_tie(key, t, offset + i, st)) {
#else
          } else if (key == t) {
#endif
            const int tie = ties_before + (int)atomicAdd(cur + 2, 1u);
            if (tie < need) slots[K - need + tie] = (u32)(offset + i);
          }
        });
      }
    } else if (stage == STAGE_COPY) {
      const u32* slots = w.staged + (long long)row * K;
      int* dst = out + (long long)row * out_pitch;
#if CALL_IO
      // The row's positions as the call stores them (one CTA per row with order=sorted).
      describe_row(call, scores, pitch, row, out_pitch, span, w.status);
      __syncthreads();
      bool nan = false;
      for (int i = blockIdx.x * THREADS + threadIdx.x; i < K; i += gridDim.x * THREADS) {
        const u32 p = slots[i];
        if (p == 0xffffffffu) {
          put_padding(dst, i);
        } else {
          // A short row's scores are read here first (values, sorting): its NaN is found here.
          const float x = VALUES || (SORTED && !active) ? load_cg(s_row_io.row + p) : 0.0f;
          nan |= !active && x != x;
          put_selected(dst, i, (int)p, x);
        }
      }
      if (__syncthreads_or(nan ? 1 : 0) && threadIdx.x == 0) atomicOr(w.status, STATUS_NAN);
      finish_call_row(dst, L);
#else
      for (int i = blockIdx.x * THREADS + threadIdx.x; i < K; i += gridDim.x * THREADS)
        dst[i] = (int)slots[i];
#endif
    }
  }
}

// Element-wise sum of another rank's region into this one: the all-reduce of ranks simulated
// on one device.
extern "C" __global__ void SUM_ENTRY(SUM_ENTRY_PARAMS) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    dst[i] += src[i];
}

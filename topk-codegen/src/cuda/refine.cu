// ---- Phase 3 (paper §4.4, §5.4): frontier-only radix refinement with commit / retain. ----

// Frontier items per thread and step of the on-chip passes. Two on CTAs of up to 512 threads
// (1-2% faster at 128K-256K and 2-4% on short rows than one, bench/RESULTS.md); one on
// 1024-thread CTAs, whose frontier is a few items per thread (cluster rank 0, row-local): there
// two measured even (0.99-1.02x) and four 2-8% slower, so they keep the single-item steps.
constexpr int REFINE_BATCH = THREADS >= 1024 ? 1 : 2;

// On entry frontier 0 holds the C_COUNT candidates (all scores in [lo, hi)) and `quota` slots
// remain; their leading-digit histogram is counted here from the frontier. Each digit commits the groups strictly ahead of the
// boundary digit and retains only the boundary group, in the other ping-pong buffer. A frontier
// larger than shared + spill capacity was counted but not stored: it is then re-read from the
// row, filtered by the boundary prefix found so far (same classification, more row traffic).
template <class Src>
__device__ void refine_frontier(const Src& src, float lo, float hi, int quota, RowCtx& c,
                                int* __restrict__ out_row) {
  int n = *s_counter(C_COUNT);
  const bool rescan = n > CAP + c.spill_cap;
  u32 prefix = 0u;
  int cur = 0;  // ping-pong buffer holding the current frontier
  clear_hist(HIST_BINS);
  __syncthreads();
  if (rescan) {
    src.for_each([&](float x, int i) {
      if (x >= lo && !(x >= hi)) atomicAdd(&s_hist()[digit_of(desc_key32(x), 0)], 1);
    });
  } else {
    // Admitted scores share a few leading digits: one shared atomic per distinct bin per warp
    // instead of up to 32 serialized ones on the same word. REFINE_BATCH items per thread and
    // step, their loads issued together.
    for (int base = 0; base < n; base += THREADS * REFINE_BATCH) {
      u32 bin[REFINE_BATCH];
#pragma unroll
      for (int u = 0; u < REFINE_BATCH; ++u) {
        const int p = base + u * THREADS + threadIdx.x;
        u32 key = 0u;
        int idx;
        if (p < n) frontier_load(c.spill, c.spill_cap, 0, p, key, idx);
        bin[u] = p < n ? digit_of(key, 0) : 0xffffffffu;
      }
#pragma unroll
      for (int u = 0; u < REFINE_BATCH; ++u) {
        const u32 peers = __match_any_sync(FULL_MASK, bin[u]);
        if (bin[u] != 0xffffffffu && (threadIdx.x & 31) == __ffs(peers) - 1)
          atomicAdd(&s_hist()[bin[u]], __popc(peers));
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < NUM_DIGITS; ++j) {
    if (!rescan && n == quota) {
      // The boundary group is exactly the slots left: all of it belongs to the output, and
      // the remaining digits (a histogram, a scan and a pass each) are skipped.
      for (int base = 0; base < n; base += THREADS) {
        const int p = base + threadIdx.x;
        u32 key;
        int idx = 0;
        if (p < n) frontier_load(c.spill, c.spill_cap, cur, p, key, idx);
        emit_output(p < n, idx, out_row, K);
      }
      __syncthreads();
      break;
    }
    if (!rescan && n <= 32) {
      // A boundary group of one warp's size (usually the case after the second digit): warp 0
      // ranks it by full key, equal keys by position, and the first `quota` complete the row
      // in the last slots. Saves the remaining digits' histograms, scans and passes.
      if (threadIdx.x < 32) {
        const int lane = threadIdx.x;
        u32 key = 0xffffffffu;
        int idx = 0;
        if (lane < n) frontier_load(c.spill, c.spill_cap, cur, lane, key, idx);
        int rank = 0;
        for (int o = 0; o < n; ++o) {
          const u32 other = __shfl_sync(FULL_MASK, key, o);
          rank += other < key || (other == key && o < lane);
        }
        if (lane < n && rank < quota) out_row[K - quota + rank] = idx;
      }
      __syncthreads();
      break;
    }
    const Boundary b = find_boundary<HIST_BINS>(quota);
    if (b.bin >= (1 << digit_width(j))) break;  // only reachable with NaN input (reported)
    clear_hist(HIST_BINS);
    if (threadIdx.x == 0) { *s_counter(C_NEXT) = 0; *s_counter(C_TIES) = 0; }
    __syncthreads();
    const bool last = j == NUM_DIGITS - 1;
    const u32 bin = (u32)b.bin;
    const int ties = quota - b.before;  // boundary-group items still needed
    auto classify = [&](u32 key, int idx, bool v) {
      const u32 d = digit_of(key, j);
      emit_output(v && d < bin, idx, out_row, K);
      const bool keep = v && d == bin;
      if (last) {
        // Equal FP32 keys: any `ties` of them complete the row, in the last slots.
        const int pos = warp_reserve(keep, s_counter(C_TIES));
        if (keep && pos < ties) out_row[K - ties + pos] = idx;
      } else if (rescan) {
        if (keep) atomicAdd(&s_hist()[digit_of(key, j + 1)], 1);
      } else {
        append_candidate(keep, key, idx, C_NEXT, c.spill, c.spill_cap, cur ^ 1, j + 1);
      }
    };
    if (rescan) {
      src.for_each_uniform([&](float x, int i, bool v) {
        const u32 key = desc_key32(x);
        const bool in = v && x >= lo && !(x >= hi) && (j == 0 || (key >> digit_shift(j - 1)) == prefix);
        classify(key, i, in);
      });
    } else {
      // The same classification, REFINE_BATCH items per thread and step: the loads are issued
      // together and each counter is reserved once per warp for all of them.
      for (int base = 0; base < n; base += THREADS * REFINE_BATCH) {
        u32 key[REFINE_BATCH];
        int idx[REFINE_BATCH];
        bool commit[REFINE_BATCH], keep[REFINE_BATCH];
#pragma unroll
        for (int u = 0; u < REFINE_BATCH; ++u) {
          const int p = base + u * THREADS + threadIdx.x;
          key[u] = 0u;
          idx[u] = 0;
          if (p < n) frontier_load(c.spill, c.spill_cap, cur, p, key[u], idx[u]);
          const u32 d = digit_of(key[u], j);
          commit[u] = p < n && d < bin;
          keep[u] = p < n && d == bin;
        }
        int pos[REFINE_BATCH];
        warp_reserve_batch(commit, s_counter(C_OUT), pos);
#pragma unroll
        for (int u = 0; u < REFINE_BATCH; ++u)
          if (commit[u] && pos[u] < K) out_row[pos[u]] = idx[u];
        warp_reserve_batch(keep, s_counter(last ? C_TIES : C_NEXT), pos);
#pragma unroll
        for (int u = 0; u < REFINE_BATCH; ++u) {
          if (!keep[u]) continue;
          if (last) {
            // Equal FP32 keys: any `ties` of them complete the row, in the last slots.
            if (pos[u] < ties) out_row[K - ties + pos[u]] = idx[u];
          } else {
            frontier_store(c.spill, c.spill_cap, cur ^ 1, pos[u], key[u], idx[u]);
            atomicAdd(&s_hist()[digit_of(key[u], j + 1)], 1);
          }
        }
      }
    }
    __syncthreads();
    prefix = j == 0 ? bin : ((prefix << digit_width(j)) | bin);
    quota = ties;
    n = *s_counter(C_NEXT);
    cur ^= 1;
    __syncthreads();
  }
}

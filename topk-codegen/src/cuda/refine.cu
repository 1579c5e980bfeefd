// ---- Phase 3 (paper §4.4, §5.4): frontier-only radix refinement with commit / retain. ----

// Frontier items per thread and step of the on-chip passes. Two on CTAs of up to 512 threads
// (1-2% faster at 128K-256K and 2-4% on short rows than one, bench/RESULTS.md); one on
// 1024-thread CTAs, whose frontier is a few items per thread (cluster rank 0, row-local): there
// two measured even (0.99-1.02x) and four 2-8% slower, so they keep the single-item steps.
constexpr int REFINE_BATCH = THREADS >= 1024 ? 1 : 2;

// Rounds of the refinement and the key digit of round j. With ties=lowest the final group (every
// entry with the K-th key) continues over its positions, in the same digits: the composite key
// (key, position) is a total order, so its last round leaves exactly the entries to commit. The
// group's positions then stand in for its keys in the frontier (they are all one key).
// The rounds' loops are unrolled (each round's digit a constant) except with ties=lowest, whose
// twice as many inlined rounds spilled registers on CTAs of up to 512 threads.
#if CALL_IO
constexpr int REFINE_ROUNDS = LOWEST_TIES ? 2 * NUM_DIGITS : NUM_DIGITS;
constexpr int REFINE_UNROLL = LOWEST_TIES ? 1 : REFINE_ROUNDS;
#define ROUND_DIGIT(j) ((j) % NUM_DIGITS)
#else
#define REFINE_ROUNDS NUM_DIGITS
#define REFINE_UNROLL NUM_DIGITS
#define ROUND_DIGIT(j) (j)
#endif

// The first round's digit where the frontier spans a narrow range from lo to upper (the exact
// routes' coarse bin [lo, hi), the sampled routes' [lo, the view's largest sample]): HIST_BINS
// equal slices of it (a score at or above `upper` falls in bin 0, one below `lo` in the last
// bins; above the view's largest sample lie about a stride's worth of an i.i.d. row's scores,
// which bin 0 commits unless it is the boundary bin).
// Monotone (larger score, smaller or equal bin), as the key digits are, so the same commit /
// retain rule applies whatever lo and upper are. The scores of one coarse bin (the exact
// routes) or a row's few thousand largest (the sampled routes) share their leading key digits,
// which then leave a group of hundreds after a round; the slices usually leave a few keys,
// which one warp finishes. `upper` (SCRATCH_F1) and the slice scale are read from block
// scratch per item: held in registers through the round they made the 384-thread kernel spill.
struct LinearDigit {
  __device__ __forceinline__ u32 operator()(u32 key) const {
    const float upper = __int_as_float(s_scratch()[SCRATCH_F1]);
    const float scale = __int_as_float(s_scratch()[SCRATCH_LIN_SCALE]);
    const float d = fmaxf(upper - from_ascending(~key), 0.0f) * scale;
    return d < (float)(HIST_BINS - 1) ? (u32)d : (u32)(HIST_BINS - 1);
  }
};

// Whether slices from lo to upper have a finite positive width; if so thread 0 stores `upper`
// (SCRATCH_F1) and the slice scale, visible after the caller's next __syncthreads. The same
// answer everywhere; a NaN `upper` (the caller asks for the key digit) answers no.
__device__ __forceinline__ bool linear_digit_usable(float lo, float upper) {
  const float width = upper - lo;
  const float scale = (float)(HIST_BINS - 1) / width;
  if (!(width > 0.0f) || !isfinite(width) || !isfinite(scale) || !(scale > 0.0f)) return false;
  if (threadIdx.x == 0) {
    s_scratch()[SCRATCH_F1] = __float_as_int(upper);
    s_scratch()[SCRATCH_LIN_SCALE] = __float_as_int(scale);
  }
  return true;
}

// Counts the frontier's bins of `digit` into s_hist, REFINE_BATCH items per thread and step,
// their loads issued together. `aggregate`: admitted scores share a few leading key digits, so
// one shared atomic per distinct bin per warp (`__match_any_sync`) instead of up to 32
// serialized ones on the same word; linear slices spread the items over many bins, where the
// match costs more than it saves (the sampled rows' refinement over linear slices took 9.5-12.2
// us counted with the match, 5.6-6.7 us with a plain atomic per item, bench/RESULTS.md).
template <class Digit>
__device__ __forceinline__ void count_frontier(int n, int buf, const Digit& digit, RowCtx& c,
                                               bool aggregate = true) {
  for (int base = 0; base < n; base += THREADS * REFINE_BATCH) {
    u32 bin[REFINE_BATCH];
#pragma unroll
    for (int u = 0; u < REFINE_BATCH; ++u) {
      const int p = base + u * THREADS + threadIdx.x;
      u32 key = 0u;
      int idx;
      if (p < n) frontier_load(c.spill, c.spill_cap, buf, p, key, idx);
      bin[u] = p < n ? digit(key) : 0xffffffffu;
    }
    if (!aggregate) {
#pragma unroll
      for (int u = 0; u < REFINE_BATCH; ++u)
        if (bin[u] != 0xffffffffu) atomicAdd(&s_hist()[bin[u]], 1);
      continue;
    }
#pragma unroll
    for (int u = 0; u < REFINE_BATCH; ++u) {
      const u32 peers = __match_any_sync(FULL_MASK, bin[u]);
      if (bin[u] != 0xffffffffu && (threadIdx.x & 31) == __ffs(peers) - 1)
        atomicAdd(&s_hist()[bin[u]], __popc(peers));
    }
  }
}

// One on-chip round over frontier `cur`: items whose digit is below `bin` are committed, the
// boundary group (digit == bin) is retained in the other buffer with its `next_digit` bins
// counted, or, on the last digit, `ties` of it fill the row's last slots. The frontier's key
// slots hold the scores' keys up to round NUM_DIGITS (next_digit <= NUM_DIGITS), positions
// after. REFINE_BATCH items per thread and step: the loads are issued together and each counter
// is reserved once per warp for all of them.
template <class Digit>
__device__ __forceinline__ void partition_frontier(int n, int cur, u32 bin, bool last, int ties,
                                                   int next_digit, const Digit& digit, RowCtx& c,
                                                   int* __restrict__ out_row) {
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
      const u32 d = digit(key[u]);
      commit[u] = p < n && d < bin;
      keep[u] = p < n && d == bin;
    }
    const bool keyed = next_digit <= NUM_DIGITS;
    int pos[REFINE_BATCH];
    warp_reserve_batch(commit, s_counter(C_OUT), pos);
#pragma unroll
    for (int u = 0; u < REFINE_BATCH; ++u)
      if (commit[u] && pos[u] < K) put_selected_key(out_row, pos[u], idx[u], key[u], keyed);
    warp_reserve_batch(keep, s_counter(last ? C_TIES : C_NEXT), pos);
#pragma unroll
    for (int u = 0; u < REFINE_BATCH; ++u) {
      if (!keep[u]) continue;
      if (last) {
        // Equal FP32 keys: any `ties` of them complete the row, in the last slots.
        if (pos[u] < ties) put_selected_key(out_row, K - ties + pos[u], idx[u], key[u], keyed);
      } else {
#if CALL_IO
        // Past the key's last digit (ties=lowest) the group continues over its positions.
        const u32 kept = next_digit == NUM_DIGITS ? (u32)idx[u] : key[u];
        frontier_store(c.spill, c.spill_cap, cur ^ 1, pos[u], kept, idx[u]);
        atomicAdd(&s_hist()[digit_of(kept, ROUND_DIGIT(next_digit))], 1);
#else
        frontier_store(c.spill, c.spill_cap, cur ^ 1, pos[u], key[u], idx[u]);
        atomicAdd(&s_hist()[digit_of(key[u], next_digit)], 1);
#endif
      }
    }
  }
}

// The boundary group of at most one warp's size (usually the case after the second key digit,
// or after a linear first round): warp 0 ranks it by full key, equal keys by frontier position
// (with ties=lowest by row position), and the first `quota` complete the row in the last slots.
// Saves the remaining digits' histograms, scans and passes.
__device__ __forceinline__ void finish_in_one_warp(int n, int cur, int quota, bool keyed, RowCtx& c,
                                                   int* __restrict__ out_row) {
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    u32 key = 0xffffffffu;
    int idx = 0;
    if (lane < n) frontier_load(c.spill, c.spill_cap, cur, lane, key, idx);
    int rank = 0;
    for (int o = 0; o < n; ++o) {
      const u32 other = __shfl_sync(FULL_MASK, key, o);
#if CALL_IO
      if constexpr (LOWEST_TIES) {
        const int other_idx = __shfl_sync(FULL_MASK, idx, o);
        rank += other < key || (other == key && other_idx < idx);
        continue;
      }
#endif
      rank += other < key || (other == key && o < lane);
    }
    if (lane < n && rank < quota) put_selected_key(out_row, K - quota + rank, idx, key, keyed);
  }
  __syncthreads();
}

// A frontier of at most RANK_SWEEP_MAX items is finished by one ranking sweep instead of a
// round per key digit (a histogram, a scan of HIST_BINS and a pass, each behind barriers): every
// item counts the items ahead of it, and the first `quota` take the row's last slots. Its cost
// grows with the square of the frontier, the rounds' with the histogram, so only small ones.
constexpr int RANK_SWEEP_MAX = THREADS < 256 ? THREADS : 256;

// Whether frontier `buf` of n items is small enough for finish_by_ranking and held in shared
// memory (the sweep reads the other items from there).
__device__ __forceinline__ bool rank_sweep_fits(int n, int buf) {
  return n > 32 && n <= RANK_SWEEP_MAX && n <= cap_of(buf);
}

// The ranking sweep over frontier `cur` (rank_sweep_fits): `group` consecutive threads of a warp
// share an item, each comparing it with every group-th other item, and their counts are summed
// by shuffles. The order is the full key, equal keys by frontier position (with ties=lowest by
// row position), the same as finish_in_one_warp's.
__device__ __forceinline__ void finish_by_ranking(int n, int cur, int quota, bool keyed,
                                                  int* __restrict__ out_row) {
  int group = 1;  // the same in every thread: a power of two up to a warp
  while (group < 32 && 2 * group * n <= THREADS) group *= 2;
  const int item = (int)threadIdx.x / group;
  const int part = (int)threadIdx.x % group;
  const u32* keys = s_keys(cur);
  const int* idxs = s_idx(cur);
  u32 key = 0u;
  int idx = 0;
  int rank = 0;
  if (item < n) {
    key = keys[item];
    idx = idxs[item];
    for (int o = part; o < n; o += group) {
      const u32 other = keys[o];
#if CALL_IO
      if constexpr (LOWEST_TIES) {
        rank += other < key || (other == key && idxs[o] < idx);
        continue;
      }
#endif
      rank += other < key || (other == key && o < item);
    }
  }
  for (int lane = group / 2; lane > 0; lane /= 2) rank += __shfl_xor_sync(FULL_MASK, rank, lane);
  if (item < n && part == 0 && rank < quota) put_selected_key(out_row, K - quota + rank, idx, key, keyed);
  __syncthreads();
}

// The boundary group is exactly the slots left: all of it belongs to the output, and the
// remaining digits (a histogram, a scan and a pass each) are skipped.
__device__ __forceinline__ void emit_whole_frontier(int n, int cur, bool keyed, RowCtx& c,
                                                    int* __restrict__ out_row) {
  for (int base = 0; base < n; base += THREADS) {
    const int p = base + threadIdx.x;
    u32 key = 0u;
    int idx = 0;
    if (p < n) frontier_load(c.spill, c.spill_cap, cur, p, key, idx);
    const int slot = warp_reserve(p < n, s_counter(C_OUT));
    if (p < n && slot < K) put_selected_key(out_row, slot, idx, key, keyed);
  }
  __syncthreads();
}

// Clears the histogram and the round's counters for the next partition.
__device__ __forceinline__ void start_round() {
  clear_hist(HIST_BINS);
  if (threadIdx.x == 0) { *s_counter(C_NEXT) = 0; *s_counter(C_TIES) = 0; }
  __syncthreads();
}

// Refinement of a frontier held on chip (shared memory plus the spill slice): n items in
// frontier 0, all from `lo` up, `quota` slots left. The first round cuts [lo, upper] into linear
// slices (LinearDigit) where that range is finite and wide, else (`upper` NaN) bins the leading
// key digit; the key digits follow on the boundary group. A small frontier, at the start or after
// a round, is ranked in one sweep instead.
__device__ __forceinline__ void refine_on_chip(int n, float lo, float upper, int quota, RowCtx& c,
                                               int* __restrict__ out_row) {
  if (n != quota && rank_sweep_fits(n, 0)) {
    finish_by_ranking(n, 0, quota, true, out_row);
    return;
  }
  int cur = 0;  // ping-pong buffer holding the current frontier
  const bool linear = n != quota && n > 32 && linear_digit_usable(lo, upper);
  if (linear) {
    __syncthreads();
    const LinearDigit lin;
    count_frontier(n, 0, lin, c, false);
    __syncthreads();
    const Boundary b = find_boundary<HIST_BINS>(quota);
    if (b.bin >= HIST_BINS) return;  // only reachable with NaN input (reported)
    start_round();
    partition_frontier(n, 0, (u32)b.bin, false, 0, 0, lin, c, out_row);
    __syncthreads();
    quota -= b.before;
    n = *s_counter(C_NEXT);
    cur = 1;
  } else {
    count_frontier(n, 0, [](u32 key) { return digit_of(key, 0); }, c);
  }
  __syncthreads();
#pragma unroll REFINE_UNROLL
  for (int j = 0; j < REFINE_ROUNDS; ++j) {
    const bool keyed = j < NUM_DIGITS;  // the frontier's key slots hold keys (partition_frontier)
    if (n == quota) { emit_whole_frontier(n, cur, keyed, c, out_row); break; }
    if (n <= 32) { finish_in_one_warp(n, cur, quota, keyed, c, out_row); break; }
    if (rank_sweep_fits(n, cur)) { finish_by_ranking(n, cur, quota, keyed, out_row); break; }
    const Boundary b = find_boundary<HIST_BINS>(quota);
    if (b.bin >= (1 << digit_width(ROUND_DIGIT(j)))) break;  // only reachable with NaN input (reported)
    start_round();
    const int ties = quota - b.before;  // boundary-group items still needed
    partition_frontier(n, cur, (u32)b.bin, j == REFINE_ROUNDS - 1, ties, j + 1,
                       [j](u32 key) { return digit_of(key, ROUND_DIGIT(j)); }, c, out_row);
    __syncthreads();
    quota = ties;
    n = *s_counter(C_NEXT);
    cur ^= 1;
    __syncthreads();
  }
}

// Refinement of a frontier larger than shared memory plus the spill slice: it was counted but
// not stored, so every digit re-reads the row, filtered by the boundary prefix found so far
// (the same classification, more row traffic).
#if CALL_IO
// With the call interface: the rounds of REFINE_ROUNDS, those past the key's digits (ties=lowest)
// over the positions of the scores with the K-th key.
template <class Src>
__device__ void refine_by_rescan(const Src& src, float lo, float hi, int quota,
                                 int* __restrict__ out_row) {
  src.for_each([&](float x, int i) {
    if (x >= lo && !(x >= hi)) atomicAdd(&s_hist()[digit_of(desc_key32(x), 0)], 1);
  });
  __syncthreads();
  u32 prefix = 0u;     // the round key's prefix found so far
  u32 threshold = 0u;  // the K-th key, once the key's digits are done
#pragma unroll REFINE_UNROLL
  for (int j = 0; j < REFINE_ROUNDS; ++j) {
    const int dj = ROUND_DIGIT(j);
    const bool positions = j >= NUM_DIGITS;
    const Boundary b = find_boundary<HIST_BINS>(quota);
    if (b.bin >= (1 << digit_width(dj))) break;  // only reachable with NaN input (reported)
    start_round();
    const bool last = j == REFINE_ROUNDS - 1;
    const u32 bin = (u32)b.bin;
    const int ties = quota - b.before;  // boundary-group items still needed
    src.for_each_uniform([&](float x, int i, bool v) {
      const u32 key = desc_key32(x);
      const u32 round_key = positions ? (u32)i : key;
      const bool group = positions ? key == threshold : true;
      const bool in = v && x >= lo && !(x >= hi) && group &&
                      (dj == 0 || (round_key >> digit_shift(dj - 1)) == prefix);
      const u32 d = digit_of(round_key, dj);
      emit_output(in && d < bin, i, x, out_row, K);
      const bool keep = in && d == bin;
      if (last) {
        // Equal round keys: any `ties` of them complete the row, in the last slots.
        const int pos = warp_reserve(keep, s_counter(C_TIES));
        if (keep && pos < ties) put_selected(out_row, K - ties + pos, i, x);
      } else if (keep) {
        const u32 next = j + 1 == NUM_DIGITS ? (u32)i : round_key;
        atomicAdd(&s_hist()[digit_of(next, ROUND_DIGIT(j + 1))], 1);
      }
    });
    __syncthreads();
    prefix = dj == 0 ? bin : ((prefix << digit_width(dj)) | bin);
    if (j == NUM_DIGITS - 1) threshold = prefix;
    quota = ties;
  }
}
#else
template <class Src>
__device__ void refine_by_rescan(const Src& src, float lo, float hi, int quota,
                                 int* __restrict__ out_row) {
  src.for_each([&](float x, int i) {
    if (x >= lo && !(x >= hi)) atomicAdd(&s_hist()[digit_of(desc_key32(x), 0)], 1);
  });
  __syncthreads();
  u32 prefix = 0u;
#pragma unroll
  for (int j = 0; j < NUM_DIGITS; ++j) {
    const Boundary b = find_boundary<HIST_BINS>(quota);
    if (b.bin >= (1 << digit_width(j))) break;  // only reachable with NaN input (reported)
    start_round();
    const bool last = j == NUM_DIGITS - 1;
    const u32 bin = (u32)b.bin;
    const int ties = quota - b.before;  // boundary-group items still needed
    src.for_each_uniform([&](float x, int i, bool v) {
      const u32 key = desc_key32(x);
      const bool in = v && x >= lo && !(x >= hi) &&
                      (j == 0 || (key >> digit_shift(j - 1)) == prefix);
      const u32 d = digit_of(key, j);
      emit_output(in && d < bin, i, x, out_row, K);
      const bool keep = in && d == bin;
      if (last) {
        // Equal FP32 keys: any `ties` of them complete the row, in the last slots.
        const int pos = warp_reserve(keep, s_counter(C_TIES));
        if (keep && pos < ties) put_selected(out_row, K - ties + pos, i, x);
      } else if (keep) {
        atomicAdd(&s_hist()[digit_of(key, j + 1)], 1);
      }
    });
    __syncthreads();
    prefix = j == 0 ? bin : ((prefix << digit_width(j)) | bin);
    quota = ties;
  }
}
#endif

// On entry frontier 0 holds the C_COUNT candidates (all scores in [lo, hi)), `quota` slots
// remain, and s_hist (HIST_BINS) was cleared before a barrier: the callers clear it while their
// last pass streams, off the row's chain. Each digit commits the groups strictly ahead of the
// boundary digit and retains only the boundary group, in the other ping-pong buffer. `upper`:
// the top of the first round's linear slices (refine_on_chip; NaN for the leading key digit).
template <class Src>
__device__ void refine_frontier(const Src& src, float lo, float hi, float upper, int quota,
                                RowCtx& c, int* __restrict__ out_row) {
  const int n = *s_counter(C_COUNT);
  // A boundary group may be the whole frontier, so it must fit buffer 1 as well.
  if (n > CAP1 + c.spill_cap) refine_by_rescan(src, lo, hi, quota, out_row);
  else refine_on_chip(n, lo, upper, quota, c, out_row);
}

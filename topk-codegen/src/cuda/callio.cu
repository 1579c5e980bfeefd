// ---- The call interface (docs/interface.md): row sources, the row descriptor, sorted output. ----
// Compiled in only for a spec beyond the plain operator (CALL_IO, from the prelude); the writes
// themselves are put_selected and put_padding (block.cu).
#if CALL_IO

// A row's valid window: scores [start, start + L) of its row.
struct RowSpan {
  int start;
  int L;
};

// Row `row`'s window from the call's row source. One outside [0, width] (or a decode call with
// next_n < 1) is reported, by thread 0 when `report`, and read as empty.
__device__ __forceinline__ RowSpan call_row_span(const CallArgs& a, int row, int width,
                                                 u32* __restrict__ status, bool report) {
  long long start = 0, end;
  if constexpr (ROW_SOURCE == ROWS_WINDOW) {
    start = a.starts[row];
    end = a.ends[row];
  } else if constexpr (ROW_SOURCE == ROWS_DECODE) {
    // vLLM's speculative decode: the next_n rows of a sequence see one more token each.
    const int n = a.next_n;
    end = n < 1 ? -1 : (long long)a.seq_lens[row / n] - n + 1 + row % n;
  } else {
    end = a.lengths[row];
  }
  RowSpan w;
  w.start = 0;
  w.L = 0;
  if (start < 0 || end < start || end > width) {
    if (report && threadIdx.x == 0) atomicOr(status, STATUS_BAD_LENGTH);
  } else {
    w.start = (int)start;
    w.L = (int)(end - start);
  }
  return w;
}

#ifdef CALL_PAGE_ROWS
// transform=paged(rows): the page-table row of score row `row`, its entry of the row map (which
// transform_fits checks).
__device__ __forceinline__ long long page_table_row(const CallArgs& a, int row) {
  return a.page_rows[row];
}
#endif

// Whether the transform writes every index of the row as a non-negative int32 (the per-row
// check of docs/interface.md): the offset range, or a page for the last index (in a table row
// the row map names, with transform=paged(rows)).
__device__ __forceinline__ bool transform_fits(const CallArgs& a, int row, const RowSpan& w) {
#ifdef CALL_PAGE_ROWS
  const long long table_row = page_table_row(a, row);
  if (table_row < 0 || table_row >= a.page_table_rows) return false;
#endif
  if (w.L == 0) return true;
  const long long first = ABSOLUTE_INDICES ? w.start : 0;
  const long long last = first + w.L - 1;
  if constexpr (INDEX_TRANSFORM == TRANSFORM_OFFSET) {
    const long long offset = a.offsets[row];
    return first + offset >= 0 && last + offset <= 0x7fffffffLL;
  } else if constexpr (INDEX_TRANSFORM == TRANSFORM_PAGED) {
    return a.page_size >= 1 && last / a.page_size < a.page_columns;
  } else {
    return true;
  }
}

// Thread 0 describes row `row` to its writes (s_row_io; a barrier must follow before them).
__device__ __forceinline__ void describe_row(const CallArgs& a, const score_t* __restrict__ scores,
                                             long long pitch, int row, long long out_pitch,
                                             const RowSpan& w, u32* __restrict__ status) {
  if (threadIdx.x != 0) return;
  if constexpr (VALUES) s_row_io.values = a.values + row * out_pitch;
  s_row_io.row = scores + row * pitch + w.start;
  if constexpr (INDEX_TRANSFORM == TRANSFORM_PAGED) {
#ifdef CALL_PAGE_ROWS
    s_row_io.pages = a.page_table + page_table_row(a, row) * a.page_pitch;
#else
    s_row_io.pages = a.page_table + row * a.page_pitch;
#endif
    s_row_io.page_size = a.page_size;
  }
  if constexpr (INDEX_TRANSFORM == TRANSFORM_OFFSET) s_row_io.offset = a.offsets[row];
  s_row_io.base = ABSOLUTE_INDICES ? w.start : 0;
  s_row_io.status = status;
#ifdef CALL_PRIOR
  s_row_io.prior = a.prior[row];
#endif
#ifdef CALL_BOUNDARY
  s_row_io.boundary = a.boundary + row;
#endif
}

// Every thread of the CTA, at the start of row `row`: its window, checked, and its descriptor
// for the row's writes, visible when this returns. A row whose indices the transform cannot
// write is reported (STATUS_BAD_TRANSFORM) and read as empty.
__device__ RowSpan begin_call_row(const CallArgs& a, const score_t* __restrict__ scores,
                                  long long pitch, int row, int width, long long out_pitch,
                                  u32* __restrict__ status) {
  RowSpan w = call_row_span(a, row, width, status, true);
  if (!transform_fits(a, row, w)) {
    if (threadIdx.x == 0) atomicOr(status, STATUS_BAD_TRANSFORM);
    w.L = 0;
  }
  describe_row(a, scores, pitch, row, out_pitch, w, status);
#ifdef CALL_BOUNDARY
  s_boundary_key[threadIdx.x] = 0u;  // no score committed yet
#endif
  __syncthreads();
  return w;
}

// A short row (L <= K): every position, then -1; its scores are read for values and sorting
// (a NaN among them is flagged in `nan`).
__device__ __forceinline__ void put_short_row(int* __restrict__ out_row, int L, bool& nan) {
  for (int i = threadIdx.x; i < K; i += THREADS) {
    if (i < L) {
      const float x = VALUES || SORTED ? load_cg(s_row_io.row + i) : 0.0f;
      nan |= x != x;
      put_selected(out_row, i, i, x);
    } else {
      put_padding(out_row, i);
    }
  }
}

__device__ __forceinline__ int load_cg_i32(const int* p) {
  int v;
  asm volatile("ld.global.cg.s32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// order=sorted: orders the row's n staged positions (put_selected) by (key, position), that is
// descending by value with equal values in ascending position order, and writes them as the
// call stores them, values beside, then -1 up to K. Every thread calls, once the row's
// positions are all staged (by this CTA, or fenced by a cluster barrier).
//
// A counting sort over the frontier buffers, which the row no longer needs: the keys (staged
// beside the positions, else gathered from the row) fall into SORT_SLOTS bins spread evenly
// over [smallest, largest] key, the packed (key, position) pairs are scattered bin by bin, and
// each pair's rank is its bin's start plus the pairs of its bin below it. A bin of more than
// SORT_BIN_MAX pairs (many equal or tightly clustered keys) would make that quadratic, so such a
// row is finished by a bitonic sort of the scattered pairs instead.
__host__ __device__ constexpr int sort_bin_bits() {
  int b = 0;
  while ((1 << b) < SORT_SLOTS) ++b;
  return b;
}
constexpr int SORT_BIN_BITS = sort_bin_bits();
constexpr int SORT_BIN_MAX = 48;
constexpr int SORT_ITEMS = (K + THREADS - 1) / THREADS;  // staged slots per thread

// SORT_KEYS_STAGED: where this CTA's sorted rows stage their keys, after the grid's spill slices
// (the host sizes the slices as Layout::staging_words_per_cta says). Thread 0, before any row.
__device__ __forceinline__ void stage_sort_keys(int* spill, int spill_cap) {
  if (threadIdx.x == 0)
    s_sort_keys = reinterpret_cast<u32*>(spill + (long long)gridDim.x * 4 * spill_cap) +
                  (long long)blockIdx.x * SORT_SLOTS;
}

// The bitonic sort of the fallback, over SORT_SLOTS packed pairs (padded with ~0). Each warp
// sorts blocks of SORT_BLOCK pairs in registers (element e of a lane at e * 32 + lane: strides
// under 32 through shuffles, larger ones within the lane), so only the strides that reach
// across blocks go through shared memory, with a block barrier each.
__host__ __device__ constexpr int sort_lane_pairs() {
  int p = 1;  // pairs per lane: a power of two up to 8, so every warp has a block if it can
  while (p < 8 && 64 * p * (THREADS / 32) <= SORT_SLOTS) p <<= 1;
  return p;
}
constexpr int SORT_LANE = sort_lane_pairs();
constexpr int SORT_BLOCK = 32 * SORT_LANE;
constexpr int SORT_BLOCKS = (SORT_SLOTS + SORT_BLOCK - 1) / SORT_BLOCK;

// The compare-exchange of a bitonic stage on the pair at index `g` (the lower of the two) and
// its partner: ascending where bit `size` of g is clear.
__device__ __forceinline__ void sort_exchange(u64& a, u64& b, int g, int size) {
  const bool ascending = (g & size) == 0;
  if ((a > b) == ascending) {
    const u64 t = a;
    a = b;
    b = t;
  }
}

// The stages of strides below SORT_BLOCK of bitonic size `size` (0: every size from 2 to
// SORT_BLOCK) over each of this warp's blocks, held in registers. Warp-uniform.
static_assert(SORT_BLOCK <= 256, "sort_blocks unrolls strides up to 128");
__device__ __forceinline__ void sort_blocks(u64* pairs, int size) {
  const int lane = threadIdx.x & 31;
  for (int b = threadIdx.x >> 5; b < SORT_BLOCKS; b += THREADS / 32) {
    const int base = b * SORT_BLOCK;
    u64 v[SORT_LANE];
#pragma unroll
    for (int e = 0; e < SORT_LANE; ++e) {
      const int g = base + e * 32 + lane;
      v[e] = g < SORT_SLOTS ? pairs[g] : ~0ull;
    }
    for (int sz = size == 0 ? 2 : size; sz <= (size == 0 ? SORT_BLOCK : size); sz <<= 1) {
#pragma unroll
      for (int t = 7; t >= 0; --t) {  // strides SORT_BLOCK / 2 .. 1, largest first
        const int stride = 1 << t;
        if (stride >= SORT_BLOCK || stride >= sz) continue;
        if (stride >= 32) {
          const int d = stride / 32;
#pragma unroll
          for (int e = 0; e < SORT_LANE; ++e)
            if ((e & d) == 0) sort_exchange(v[e], v[e + d], base + e * 32 + lane, sz);
        } else {
#pragma unroll
          for (int e = 0; e < SORT_LANE; ++e) {
            const int g = base + e * 32 + lane;
            const u64 other = __shfl_xor_sync(FULL_MASK, v[e], stride);
            const bool lower = (lane & stride) == 0;
            const bool keep_min = lower == ((g & sz) == 0);
            v[e] = keep_min ? min(v[e], other) : max(v[e], other);
          }
        }
      }
    }
#pragma unroll
    for (int e = 0; e < SORT_LANE; ++e) {
      const int g = base + e * 32 + lane;
      if (g < SORT_SLOTS) pairs[g] = v[e];
    }
  }
}

// Sorts SORT_SLOTS packed pairs ascending. Every thread calls; ends with a barrier.
__device__ void bitonic_sort_pairs(u64* pairs) {
  // Sizes up to a block: in registers alone (size 0: all of them at once).
  sort_blocks(pairs, 0);
  __syncthreads();
  for (int size = 2 * SORT_BLOCK; size <= SORT_SLOTS; size <<= 1) {
    for (int stride = size >> 1; stride >= SORT_BLOCK; stride >>= 1) {
      for (int i = threadIdx.x; i < SORT_SLOTS / 2; i += THREADS) {
        const int lo = 2 * i - (i & (stride - 1));  // the pair's lower index: bit `stride` clear
        u64 a = pairs[lo], b = pairs[lo + stride];
        sort_exchange(a, b, lo, size);
        pairs[lo] = a;
        pairs[lo + stride] = b;
      }
      __syncthreads();
    }
    sort_blocks(pairs, size);
    __syncthreads();
  }
}

// Exclusive prefix sums of counts[0, SORT_SLOTS) in place; returns the largest count to every
// thread. Every thread calls; ends with a barrier.
__device__ u32 scan_sort_counts(u32* counts) {
  constexpr int PER = (SORT_SLOTS + THREADS - 1) / THREADS;  // consecutive bins per thread
  __shared__ u32 s_warp_sums[THREADS / 32];
  __shared__ u32 s_biggest;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int first = threadIdx.x * PER;
  u32 c[PER];
  u32 sum = 0u, biggest = 0u;
#pragma unroll
  for (int u = 0; u < PER; ++u) {
    c[u] = first + u < SORT_SLOTS ? counts[first + u] : 0u;
    sum += c[u];
    biggest = max(biggest, c[u]);
  }
  u32 inclusive = sum;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const u32 t = __shfl_up_sync(FULL_MASK, inclusive, d);
    if (lane >= d) inclusive += t;
  }
  biggest = __reduce_max_sync(FULL_MASK, biggest);
  if (lane == 31) s_warp_sums[warp] = inclusive;
  if (threadIdx.x == 0) s_biggest = 0u;
  __syncthreads();
  if (lane == 0) atomicMax(&s_biggest, biggest);
  u32 run = inclusive - sum;
  for (int w = 0; w < warp; ++w) run += s_warp_sums[w];
#pragma unroll
  for (int u = 0; u < PER; ++u) {
    if (first + u < SORT_SLOTS) counts[first + u] = run;
    run += c[u];
  }
  __syncthreads();
  return s_biggest;
}

// Output slot `rank` of a sorted row: the position's index as the call stores it, its score
// beside it.
__device__ __forceinline__ void put_sorted(int* __restrict__ out_row, int rank, u32 key, int pos) {
  out_row[rank] = written_index(pos);
  if constexpr (VALUES) s_row_io.values[rank] = to_score(score_at(key, pos));
}

__device__ void sort_output_row(int* __restrict__ out_row, int n) {
  u64* pairs = reinterpret_cast<u64*>(smem_words + FRONTIER_AT);
  u32* counts = reinterpret_cast<u32*>(smem_words + FRONTIER_AT + 2 * SORT_SLOTS);
  __shared__ u32 s_lo, s_hi;
  __syncthreads();
  // Every staged position (and key) is loaded before any score, so a thread's loads overlap.
  int pos[SORT_ITEMS];
  u32 key[SORT_ITEMS];
#pragma unroll
  for (int u = 0; u < SORT_ITEMS; ++u) {
    const int i = threadIdx.x + u * THREADS;
    pos[u] = i < n ? load_cg_i32(out_row + i) : 0;
    if constexpr (SORT_KEYS_STAGED)
      key[u] = i < n ? (u32)load_cg_i32(reinterpret_cast<const int*>(s_sort_keys) + i) : ~0u;
  }
  if constexpr (!SORT_KEYS_STAGED) {
#pragma unroll
    for (int u = 0; u < SORT_ITEMS; ++u) {
      const int i = threadIdx.x + u * THREADS;
      key[u] = i < n ? desc_key32(load_cg(s_row_io.row + pos[u])) : ~0u;
    }
  }
  for (int i = threadIdx.x; i < SORT_SLOTS; i += THREADS) counts[i] = 0u;
  if (threadIdx.x == 0) {
    s_lo = ~0u;
    s_hi = 0u;
  }
  u32 lo = ~0u, hi = 0u;
#pragma unroll
  for (int u = 0; u < SORT_ITEMS; ++u) {
    if (threadIdx.x + u * THREADS < n) {
      lo = min(lo, key[u]);
      hi = max(hi, key[u]);
    }
  }
  lo = __reduce_min_sync(FULL_MASK, lo);
  hi = __reduce_max_sync(FULL_MASK, hi);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
    atomicMin(&s_lo, lo);
    atomicMax(&s_hi, hi);
  }
  __syncthreads();
  lo = s_lo;
  hi = n > 0 ? s_hi : lo;
  // Bins of 2^shift keys each, so that [lo, hi] spans at most SORT_SLOTS of them.
  const int shift = max(0, 32 - __clz(hi - lo) - SORT_BIN_BITS);
  // A pair's bin (high half) and its arrival in the bin (low half), both under 2^16: one
  // register per staged slot instead of two, which kept the 384-thread kernels from spilling.
  static_assert(SORT_SLOTS <= 65536 && K <= 65536, "a bin and an arrival share a word");
  u32 place[SORT_ITEMS];
#pragma unroll
  for (int u = 0; u < SORT_ITEMS; ++u) {
    const u32 bin = (key[u] - lo) >> shift;
    place[u] = bin << 16;
    if (threadIdx.x + u * THREADS < n) place[u] |= atomicAdd(&counts[bin], 1u);
  }
  __syncthreads();
  const u32 biggest = scan_sort_counts(counts);  // counts[b]: where bin b starts
#pragma unroll
  for (int u = 0; u < SORT_ITEMS; ++u) {
    if (threadIdx.x + u * THREADS < n)
      pairs[counts[place[u] >> 16] + (place[u] & 0xffffu)] = ((u64)key[u] << 32) | (u32)pos[u];
  }
  if (biggest > SORT_BIN_MAX) {
    for (int i = n + threadIdx.x; i < SORT_SLOTS; i += THREADS) pairs[i] = ~0ull;  // after all
    __syncthreads();
    bitonic_sort_pairs(pairs);
    for (int i = threadIdx.x; i < n; i += THREADS)
      put_sorted(out_row, i, (u32)(pairs[i] >> 32), (int)(u32)pairs[i]);
  } else {
    __syncthreads();
#pragma unroll
    for (int u = 0; u < SORT_ITEMS; ++u) {
      if (threadIdx.x + u * THREADS >= n) continue;
      const u32 bin = place[u] >> 16;
      const u32 b0 = counts[bin];
      const u32 b1 = bin + 1 < SORT_SLOTS ? counts[bin + 1] : (u32)n;
      const u64 mine = ((u64)key[u] << 32) | (u32)pos[u];
      u32 rank = b0;
      for (u32 j = b0; j < b1; ++j) rank += pairs[j] < mine;
      put_sorted(out_row, (int)rank, key[u], pos[u]);
    }
  }
  for (int i = n + threadIdx.x; i < K; i += THREADS) put_padding(out_row, i);
  __syncthreads();
}

#ifdef CALL_BOUNDARY
// boundary=true: the row's K-th largest score, the largest key any thread committed (NaN for a
// row of L <= K; -0 is written as +0, from its key). Every thread calls.
__device__ void write_boundary(int L) {
  __shared__ u32 s_max;
  if (threadIdx.x == 0) s_max = 0u;
  __syncthreads();
  const u32 mine = __reduce_max_sync(FULL_MASK, s_boundary_key[threadIdx.x]);
  if ((threadIdx.x & 31) == 0) atomicMax(&s_max, mine);
  __syncthreads();
  if (threadIdx.x == 0) *s_row_io.boundary = L > K ? from_ascending(~s_max) : quiet_nan();
}
#endif

// The end of a row of length L: with order=sorted its staged output is ordered and written;
// with boundary=true the row's K-th largest score.
__device__ __forceinline__ void finish_call_row(int* __restrict__ out_row, int L) {
  if constexpr (SORTED) sort_output_row(out_row, min(L, K));
#ifdef CALL_BOUNDARY
  write_boundary(L);
#endif
}

#endif  // CALL_IO

// ---- Block-level building blocks: histogram boundary search, candidate append, output. ----

// Shared scratch words used by the block primitives (after NUM_WARPS warp sums).
#define SCRATCH_BIN 32
#define SCRATCH_BEFORE 33
#define SCRATCH_F0 34
#define SCRATCH_F1 35
#define SCRATCH_WORDS 40

// Shared-memory layout of one CTA, at fixed offsets from the dynamic shared base so that no
// register holds a shared pointer: the reused histogram, block scratch, counters, and two
// ping-pong frontiers of CAP (key, index) pairs each.
extern __shared__ __align__(16) int smem_words[];
#define COUNTERS_AT (HIST_BINS + SCRATCH_WORDS)
#define FRONTIER_AT (COUNTERS_AT + 8)
__device__ __forceinline__ int* s_hist() { return smem_words; }
__device__ __forceinline__ int* s_scratch() { return smem_words + HIST_BINS; }
__device__ __forceinline__ int* s_counter(int which) { return smem_words + COUNTERS_AT + which; }
__device__ __forceinline__ u32* s_keys(int buf) { return reinterpret_cast<u32*>(smem_words + FRONTIER_AT + buf * 2 * CAP); }
__device__ __forceinline__ int* s_idx(int buf) { return smem_words + FRONTIER_AT + buf * 2 * CAP + CAP; }
#define C_COUNT 0       // items in the current frontier
#define C_NEXT 1        // items appended to the next frontier
#define C_OUT 2         // committed output slots
#define C_TIES 3        // boundary ties taken at the last digit

struct Boundary {
  int bin;     // first bin whose inclusive prefix reaches the target; NB when none does
  int before;  // inclusive prefix of the bin before it
};

// Boundary bin of a shared histogram (eq. 15, eq. 23): min{b : H(b) >= target}.
// Every thread calls; returns the same value everywhere; leaves `hist` unread afterwards.
template <int NB>
__device__ Boundary find_boundary(int target) {
  const int* hist = s_hist();
  int* scratch = s_scratch();
  constexpr int PER = (NB + THREADS - 1) / THREADS;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int local[PER];
  int sum = 0;
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    int b = tid * PER + i;
    local[i] = b < NB ? hist[b] : 0;
    sum += local[i];
  }
  int incl = sum;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    int v = __shfl_up_sync(FULL_MASK, incl, o);
    if (lane >= o) incl += v;
  }
  if (lane == 31) scratch[warp] = incl;
  if (tid == 0) { scratch[SCRATCH_BIN] = NB; scratch[SCRATCH_BEFORE] = 0; }
  __syncthreads();
  if (warp == 0) {
    int w = lane < NUM_WARPS ? scratch[lane] : 0;
    int wi = w;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      int v = __shfl_up_sync(FULL_MASK, wi, o);
      if (lane >= o) wi += v;
    }
    if (lane < NUM_WARPS) scratch[lane] = wi - w;
  }
  __syncthreads();
  int run = scratch[warp] + incl - sum;
  if (run < target && run + sum >= target) {
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      if (run < target && run + local[i] >= target) {
        scratch[SCRATCH_BIN] = tid * PER + i;
        scratch[SCRATCH_BEFORE] = run;
      }
      run += local[i];
    }
  }
  __syncthreads();
  Boundary r;
  r.bin = scratch[SCRATCH_BIN];
  r.before = scratch[SCRATCH_BEFORE];
  __syncthreads();
  return r;
}

__device__ __forceinline__ void clear_hist(int n) {
  int* p = s_hist();
  for (int i = threadIdx.x; i < n; i += THREADS) p[i] = 0;
}

// A frontier buffer continues past CAP in the worker's global spill slice:
// [keys0 | idx0 | keys1 | idx1], spill_cap words each.
__device__ __forceinline__ void frontier_store(int* spill, int spill_cap, int buf, int pos, u32 key, int idx) {
  if (pos < CAP) { s_keys(buf)[pos] = key; s_idx(buf)[pos] = idx; }
  else if (pos - CAP < spill_cap) {
    int* g = spill + (long long)buf * 2 * spill_cap + (pos - CAP);
    g[0] = (int)key;
    g[spill_cap] = idx;
  }
}

__device__ __forceinline__ void frontier_load(const int* spill, int spill_cap, int buf, int pos, u32& key, int& idx) {
  if (pos < CAP) { key = s_keys(buf)[pos]; idx = s_idx(buf)[pos]; }
  else {
    const int* g = spill + (long long)buf * 2 * spill_cap + (pos - CAP);
    key = (u32)g[0];
    idx = g[spill_cap];
  }
}

// Reserve `take ? 1 : 0` slots of a shared counter with one atomic per warp; returns the slot.
// Warp-uniform call.
__device__ __forceinline__ int warp_reserve(bool take, int* counter) {
  u32 mask = __ballot_sync(FULL_MASK, take);
  if (mask == 0u) return -1;
  const int lane = threadIdx.x & 31;
  const int leader = __ffs(mask) - 1;
  int base = 0;
  if (lane == leader) base = atomicAdd(counter, __popc(mask));
  base = __shfl_sync(FULL_MASK, base, leader);
  return take ? base + __popc(mask & ((1u << lane) - 1u)) : -1;
}

// Append an admitted candidate and count its digit-`hist_digit` bin (fused, §5.3). Warp-uniform.
__device__ __forceinline__ void append_candidate(bool take, u32 key, int idx, int counter,
                                                 int* spill, int spill_cap, int buf, int hist_digit) {
  int pos = warp_reserve(take, s_counter(counter));
  if (take) {
    frontier_store(spill, spill_cap, buf, pos, key, idx);
    atomicAdd(&s_hist()[digit_of(key, hist_digit)], 1);
  }
}

// Per-thread variants for the streaming passes, where admitted scores are rare: no warp
// collective, so the common path per score is one compare and a branch. The leading-digit
// histogram of the admitted scores is built from the on-chip frontier when refinement starts
// (admitted scores share a few leading digits, so counting them in the pass would serialize
// every warp that admits one on the same few shared-memory addresses).
__device__ __forceinline__ void append_one(u32 key, int idx, int* spill, int spill_cap) {
  const int pos = atomicAdd(s_counter(C_COUNT), 1);
  frontier_store(spill, spill_cap, 0, pos, key, idx);
}

__device__ __forceinline__ void commit_one(int idx, int* out_row) {
  out_row[atomicAdd(s_counter(C_OUT), 1)] = idx;
}

// Commit an index to the row's output; `limit` caps the slots (tie fill). Warp-uniform.
__device__ __forceinline__ void emit_output(bool take, int idx, int* out_row, int limit) {
  int pos = warp_reserve(take, s_counter(C_OUT));
  if (take && pos < limit) out_row[pos] = idx;
}

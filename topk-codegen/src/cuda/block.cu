// ---- Block-level building blocks: histogram boundary search, candidate append, output. ----

// Shared scratch words used by the block primitives (after NUM_WARPS warp sums).
#define SCRATCH_BIN 32
#define SCRATCH_BEFORE 33
#define SCRATCH_F0 34
#define SCRATCH_F1 35
#define SCRATCH_WORDS 40

struct Boundary {
  int bin;     // first bin whose inclusive prefix reaches the target; NB when none does
  int before;  // inclusive prefix of the bin before it
};

// Boundary bin of a shared histogram (eq. 15, eq. 23): min{b : H(b) >= target}.
// Every thread calls; returns the same value everywhere; leaves `hist` unread afterwards.
template <int NB>
__device__ Boundary find_boundary(const int* hist, int target, int* scratch) {
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

__device__ __forceinline__ void clear_shared(int* p, int n) {
  for (int i = threadIdx.x; i < n; i += THREADS) p[i] = 0;
}

// One frontier buffer: CAP (key, index) pairs in shared memory, continued in a global spill slice.
struct Frontier {
  u32* skey;
  int* sidx;
  u32* gkey;
  int* gidx;
};

__device__ __forceinline__ void frontier_store(const Frontier& f, int pos, u32 key, int idx, int spill_cap) {
  if (pos < CAP) { f.skey[pos] = key; f.sidx[pos] = idx; }
  else if (pos - CAP < spill_cap) { f.gkey[pos - CAP] = key; f.gidx[pos - CAP] = idx; }
}

__device__ __forceinline__ void frontier_load(const Frontier& f, int pos, u32& key, int& idx) {
  if (pos < CAP) { key = f.skey[pos]; idx = f.sidx[pos]; }
  else { key = f.gkey[pos - CAP]; idx = f.gidx[pos - CAP]; }
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
__device__ __forceinline__ void append_candidate(bool take, u32 key, int idx, int* count,
                                                 const Frontier& f, int spill_cap, int* hist,
                                                 int hist_digit) {
  int pos = warp_reserve(take, count);
  if (take) {
    frontier_store(f, pos, key, idx, spill_cap);
    atomicAdd(&hist[digit_of(key, hist_digit)], 1);
  }
}

// Commit an index to the row's output; `limit` caps the slots (tie fill). Warp-uniform.
__device__ __forceinline__ void emit_output(bool take, int idx, int* out_count, int* out_row, int limit) {
  int pos = warp_reserve(take, out_count);
  if (take && pos < limit) out_row[pos] = idx;
}

// ---- Block-level building blocks: histogram boundary search, candidate append, output. ----

// Shared scratch words used by the block primitives (after NUM_WARPS warp sums).
#define SCRATCH_BIN 32     // boundary bin of find_boundaries' first target
#define SCRATCH_BEFORE 33  // inclusive prefix before it
#define SCRATCH_F0 34
#define SCRATCH_F1 35
#define SCRATCH_BIN_2 37     // the same for its second target (36 is free)
#define SCRATCH_BEFORE_2 38
#define SCRATCH_LIN_SCALE 39  // slice scale of the refinement's linear first round (refine.cu)
#define SCRATCH_TOP 40  // the view's largest sample (ascending key), from proposal to refinement
#define SCRATCH_WORDS 44  // 16-byte aligned with the counters
#define SCRATCH_BIN_OF(t) ((t) == 0 ? SCRATCH_BIN : SCRATCH_BIN_2)
#define SCRATCH_BEFORE_OF(t) ((t) == 0 ? SCRATCH_BEFORE : SCRATCH_BEFORE_2)

// Shared-memory layout of one CTA, at fixed offsets from the dynamic shared base so that no
// register holds a shared pointer: the reused histogram, block scratch, counters, and two
// ping-pong frontiers of CAP (key, index) pairs each.
extern __shared__ __align__(16) int smem_words[];
#define COUNTERS_AT (HIST_BINS + SCRATCH_WORDS)
#define FRONTIER_AT (COUNTERS_AT + 8)
static_assert(SCRATCH_WORDS + 8 == SCRATCH_AND_COUNTERS,
              "block scratch layout differs from the shared memory the host allocates");
__device__ __forceinline__ int* s_hist() { return smem_words; }
__device__ __forceinline__ int* s_scratch() { return smem_words + HIST_BINS; }
__device__ __forceinline__ int* s_counter(int which) { return smem_words + COUNTERS_AT + which; }
// The two buffers hold CAP0 + CAP1 = 2 * CAP pairs: buffer 0 a row's admitted candidates,
// buffer 1 the refinement's boundary groups (the persistent pool gives buffer 0 the larger
// share, family.rs).
static_assert(CAP0 + CAP1 == 2 * CAP, "frontier buffers differ from the host's layout");
__device__ __forceinline__ int cap_of(int buf) { return buf == 0 ? CAP0 : CAP1; }
__device__ __forceinline__ u32* s_keys(int buf) { return reinterpret_cast<u32*>(smem_words + FRONTIER_AT + (buf == 0 ? 0 : 2 * CAP0)); }
__device__ __forceinline__ int* s_idx(int buf) { return smem_words + FRONTIER_AT + (buf == 0 ? CAP0 : 2 * CAP0 + CAP1); }
#define C_COUNT 0       // items in the current frontier
#define C_NEXT 1        // items appended to the next frontier
#define C_OUT 2         // committed output slots
#define C_TIES 3        // boundary ties taken at the last digit
#define C_NAN 4         // a band pass met a NaN (reset with the row's counters)

struct Boundary {
  int bin;     // first bin whose inclusive prefix reaches the target; NB when none does
  int before;  // inclusive prefix of the bin before it
};

// Boundary bins of a shared histogram (eq. 15, eq. 23): min{b : H(b) >= target[t]} for NT
// targets from one block scan. Every thread calls; returns the same values everywhere; leaves
// `hist` unread afterwards.
template <int NB, int NT>
__device__ void find_boundaries(const int (&target)[NT], Boundary (&out)[NT]) {
  static_assert(NT == 1 || NT == 2, "scratch holds two boundaries");
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
  if (tid < NT) { scratch[SCRATCH_BIN_OF(tid)] = NB; scratch[SCRATCH_BEFORE_OF(tid)] = 0; }
  __syncthreads();
  // Every warp scans the warp sums itself: one barrier fewer than a scan by warp 0.
  int wi = lane < NUM_WARPS ? scratch[lane] : 0;
#pragma unroll
  for (int o = 1; o < NUM_WARPS; o <<= 1) {
    int v = __shfl_up_sync(FULL_MASK, wi, o);
    if (lane >= o) wi += v;
  }
  const int before_warp = warp == 0 ? 0 : __shfl_sync(FULL_MASK, wi, warp - 1);
  const int start = before_warp + incl - sum;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    int run = start;
    if (run < target[t] && run + sum >= target[t]) {
#pragma unroll
      for (int i = 0; i < PER; ++i) {
        if (run < target[t] && run + local[i] >= target[t]) {
          scratch[SCRATCH_BIN_OF(t)] = tid * PER + i;
          scratch[SCRATCH_BEFORE_OF(t)] = run;
        }
        run += local[i];
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    out[t].bin = scratch[SCRATCH_BIN_OF(t)];
    out[t].before = scratch[SCRATCH_BEFORE_OF(t)];
  }
  __syncthreads();
}

template <int NB>
__device__ Boundary find_boundary(int target) {
  const int targets[1] = {target};
  Boundary b[1];
  find_boundaries<NB, 1>(targets, b);
  return b[0];
}

// Inclusive FP32 endpoints of two coarse prefixes into SCRATCH_F0 / SCRATCH_F1, one from warp 0
// and one from warp 1 (`bin < 0`: NaN, no endpoint). Every thread calls; the values are
// in scratch after the __syncthreads that ends this call.
__device__ __forceinline__ void coarse_endpoints_to_scratch(int bin0, int bin1) {
  const int warp = threadIdx.x >> 5;
  if (warp < 2) {
    const int bin = warp == 0 ? bin0 : bin1;
    const float e = bin < 0 ? quiet_nan() : coarse_endpoint_fast((u32)bin);
    if ((threadIdx.x & 31) == 0) s_scratch()[SCRATCH_F0 + warp] = __float_as_int(e);
  }
  __syncthreads();
}

// The view's largest sample, which propose_boundary left in SCRATCH_TOP (NaN if it saw none).
__device__ __forceinline__ float view_top() {
  return from_ascending((u32)s_scratch()[SCRATCH_TOP]);
}

// A thread's largest sample so far as an ascending key (0 for none), with sample x taken in;
// NaN samples are left out.
__device__ __forceinline__ u32 with_sample(u32 top, float x) {
  return x == x ? max(top, to_ascending(canonical(x))) : top;
}

// Folds each thread's largest sample (ascending key, 0 for none) into SCRATCH_TOP, which thread 0
// zeroed before a barrier; visible after the caller's next __syncthreads. Warp-uniform call.
__device__ __forceinline__ void fold_view_top(u32 top) {
  top = __reduce_max_sync(FULL_MASK, top);
  if ((threadIdx.x & 31) == 0 && top != 0u)
    atomicMax(reinterpret_cast<u32*>(s_scratch() + SCRATCH_TOP), top);
}

__device__ __forceinline__ void clear_hist(int n) {
  int* p = s_hist();
  for (int i = threadIdx.x; i < n; i += THREADS) p[i] = 0;
}

// A frontier buffer continues past CAP in the worker's global spill slice:
// [keys0 | idx0 | keys1 | idx1], spill_cap words each.
__device__ __forceinline__ void frontier_store(int* spill, int spill_cap, int buf, int pos, u32 key, int idx) {
  const int cap = cap_of(buf);
  if (pos < cap) { s_keys(buf)[pos] = key; s_idx(buf)[pos] = idx; }
  else if (pos - cap < spill_cap) {
    int* g = spill + (long long)buf * 2 * spill_cap + (pos - cap);
    g[0] = (int)key;
    g[spill_cap] = idx;
  }
}

__device__ __forceinline__ void frontier_load(const int* spill, int spill_cap, int buf, int pos, u32& key, int& idx) {
  const int cap = cap_of(buf);
  if (pos < cap) { key = s_keys(buf)[pos]; idx = s_idx(buf)[pos]; }
  else {
    const int* g = spill + (long long)buf * 2 * spill_cap + (pos - cap);
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

// warp_reserve for U items per lane at once: one atomic per warp for all of them, so a step
// over U frontier items waits on one shared-memory round trip instead of U. pos[u] is set for
// every flagged item (unflagged ones are left as they are). Warp-uniform call.
template <int U>
__device__ __forceinline__ void warp_reserve_batch(const bool (&take)[U], int* counter, int (&pos)[U]) {
  u32 mask[U];
  int total = 0;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    mask[u] = __ballot_sync(FULL_MASK, take[u]);
    total += __popc(mask[u]);
  }
  if (total == 0) return;
  const int lane = threadIdx.x & 31;
  int base = 0;
  if (lane == 0) base = atomicAdd(counter, total);
  base = __shfl_sync(FULL_MASK, base, 0);
  const u32 below = (1u << lane) - 1u;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    pos[u] = base + __popc(mask[u] & below);
    base += __popc(mask[u]);
  }
}

// Per-thread variants for the streaming passes, where admitted scores are rare: no warp
// collective, so the common path per score is one compare and a branch. The first round's
// histogram of the admitted scores is built from the on-chip frontier when refinement starts
// (admitted scores share a few leading digits, so counting them in the pass would serialize
// every warp that admits one on the same few shared-memory addresses).
// Reserves n slots of frontier 0; returns the first. Written as the instruction itself, so the
// compiler keeps one shared atomic per lane instead of a warp aggregation (see append_one).
__device__ __forceinline__ int reserve_frontier_slots(int n) {
  int pos;
  asm volatile("atom.shared.add.u32 %0, [%1], %2;"
               : "=r"(pos)
               : "r"((u32)__cvta_generic_to_shared(s_counter(C_COUNT))), "r"(n)
               : "memory");
  return pos;
}

// Raises the row's NaN flag when `nan` holds: one predicated shared store at a CTA-uniform
// address, where a C++ store let the compiler rebuild the address on every call.
__device__ __forceinline__ void flag_nan_if(bool nan) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %0, 0;\n\t@p st.shared.u32 [%1], 1;\n\t}"
               :
               : "r"((u32)nan), "r"((u32)__cvta_generic_to_shared(s_counter(C_NAN)))
               : "memory");
}

__device__ __forceinline__ void append_one(u32 key, int idx, int* spill, int spill_cap) {
  // The added value is 1 for every index, but the assembler cannot prove it uniform: it then
  // lets each lane of a partly active warp add its own (i.i.d. rows: one or two lanes admit a
  // score slot of a step) and aggregates a wholly active warp with a warp scan (bursts of
  // admitted scores). `atomicAdd(.., 1)` became a warp aggregation on every call, about ten
  // more instructions on the rare path; i.i.d. rows of 128K took 0.93-0.95x the time without it.
  frontier_store(spill, spill_cap, 0, reserve_frontier_slots(1 + (idx >> 31)), key, idx);
}

#if CALL_IO
// The row being written (begin_call_row, callio.cu, sets it before the row's first write):
// where its values go, its window's scores, the written index's base and transform, and the
// launch's status word.
struct RowIo {
  score_t* values;    // the row's values output (values=true), in the spec's dtype
  const score_t* row; // the row's window: position i is row[i]
  const int* pages;   // the row's page-table entries (transform=paged)
  int base;           // the written index is base + position, then the transform
  int offset;         // transform=offset
  int page_size;      // transform=paged
  u32* status;
#ifdef CALL_PRIOR
  float prior;        // the row's prior boundary (NaN: none)
#endif
#ifdef CALL_BOUNDARY
  float* boundary;    // where the row's K-th largest score goes
#endif
};
__shared__ RowIo s_row_io;
// SORT_KEYS_STAGED: the CTA's slice of SORT_SLOTS words for a sorted row's keys, slot for slot
// with the positions put_selected stages in the output row (stage_sort_keys, callio.cu).
__shared__ u32* s_sort_keys;

#ifdef CALL_BOUNDARY
// Each thread's largest descending key among the scores it committed in the row (its smallest
// selected score): at the row's end their maximum is the row's K-th largest (finish_call_row).
// A slot per thread, so the commits need no atomics.
__shared__ u32 s_boundary_key[THREADS];
#endif

// The index the call stores for position `pos` of the row (docs/interface.md): base + pos, then
// the transform. A used page entry that makes it negative or too large for int32 raises
// STATUS_BAD_TRANSFORM and gives -1.
__device__ __forceinline__ int written_index(int pos) {
  const int t = s_row_io.base + pos;
  if constexpr (INDEX_TRANSFORM == TRANSFORM_OFFSET) {
    return t + s_row_io.offset;  // its range was checked per row
  } else if constexpr (INDEX_TRANSFORM == TRANSFORM_PAGED) {
    const int size = s_row_io.page_size;
    const int page = s_row_io.pages[t / size];
    const long long v = (long long)page * size + t % size;
    if (page < 0 || v > 0x7fffffffLL) {
      atomicOr(s_row_io.status, STATUS_BAD_TRANSFORM);
      return -1;
    }
    return (int)v;
  } else {
    return t;
  }
}

// Writes selected position `pos` of the row to output slot `slot` (an int or a u32, as the
// caller's counter gives it) as the call stores it, with values its score `x` (the element as
// loaded, so its bits survive) beside it. With order=sorted the bare position is staged
// instead (its key beside it with SORT_KEYS_STAGED): sort_output_row orders and writes the row.
template <class Slot>
__device__ __forceinline__ void put_selected(int* __restrict__ out_row, Slot slot, int pos, float x) {
#ifdef CALL_BOUNDARY
  s_boundary_key[threadIdx.x] = max(s_boundary_key[threadIdx.x], desc_key32(x));
#endif
  if constexpr (SORTED) {
    out_row[slot] = pos;
    if constexpr (SORT_KEYS_STAGED) s_sort_keys[slot] = desc_key32(x);
  } else {
    out_row[slot] = written_index(pos);
    if constexpr (VALUES) s_row_io.values[slot] = to_score(x);
  }
}

// Whether a commit needs the score itself: for the values output, the boundary output or the
// sort's staged keys.
#ifdef CALL_BOUNDARY
constexpr bool COMMIT_NEEDS_SCORE = true;
#else
constexpr bool COMMIT_NEEDS_SCORE = (VALUES && !SORTED) || SORT_KEYS_STAGED;
#endif

// The score at position `pos` whose key is `key`: rebuilt from the key (score_of_key) rather
// than read back from the row, a scattered load per selected score; a zero, whose sign the key
// drops, is read back.
__device__ __forceinline__ float score_at(u32 key, int pos) {
  const float x = score_of_key(key);
  return x == 0.0f ? load_cg(s_row_io.row + pos) : x;
}

// put_selected of a frontier item, its score from its key (score_at); an item whose key slot
// holds its position (`keyed` false: ties=lowest past the key's digits) reads its score back.
__device__ __forceinline__ void put_selected_key(int* __restrict__ out_row, int slot, int pos,
                                                 u32 key, bool keyed) {
  float x = 0.0f;
  if constexpr (COMMIT_NEEDS_SCORE) x = keyed ? score_at(key, pos) : load_cg(s_row_io.row + pos);
  put_selected(out_row, slot, pos, x);
}

// A slot past a short row's scores: -1, with values -inf (the sorted output's too, whose sort
// writes its padding with this).
__device__ __forceinline__ void put_padding(int* __restrict__ out_row, int slot) {
  out_row[slot] = -1;
  if constexpr (VALUES) s_row_io.values[slot] = to_score(__uint_as_float(0xff800000u));
}
#else
// The plain operator writes the position itself.
template <class Slot>
__device__ __forceinline__ void put_selected(int* __restrict__ out_row, Slot slot, int pos, float) {
  out_row[slot] = pos;
}
__device__ __forceinline__ void put_selected_key(int* __restrict__ out_row, int slot, int pos, u32,
                                                 bool) {
  out_row[slot] = pos;
}
#endif

__device__ __forceinline__ void commit_one(int idx, float x, int* out_row) {
  put_selected(out_row, atomicAdd(s_counter(C_OUT), 1), idx, x);
}

// Commit score `x` at index `idx` to the row's output; `limit` caps the slots (tie fill).
// Warp-uniform.
__device__ __forceinline__ void emit_output(bool take, int idx, float x, int* out_row, int limit) {
  int pos = warp_reserve(take, s_counter(C_OUT));
  if (take && pos < limit) put_selected(out_row, pos, idx, x);
}

// ---- Phase 1's common tail (paper §4.2, eq. 15): the proposal from a sample histogram. ----
struct ProposalResult {
  bool usable;
  float e0;  // inclusive FP32 endpoint of tau0 (target rank rho*K, tail_rho*K on tail rows)
  float e1;  // inclusive FP32 endpoint of tau1 (rescue rank), when enabled
};

// tau0 (and tau1 with rescue) from the sample histogram in s_hist: one scan for both ranks,
// both endpoints searched at once; tau0 at the tail margin's rank on a call's tail rows. Every
// thread calls; the same result everywhere.
__device__ ProposalResult proposal_from_hist(bool tail) {
  const int targets[2] = {tail ? TAIL_RANK : SAMPLE_RANK, RESCUE ? RESCUE_RANK : SAMPLE_RANK};
  Boundary b[2];
  find_boundaries<COARSE_BINS, 2>(targets, b);
  coarse_endpoints_to_scratch(b[0].bin, b[1].bin);
  ProposalResult p;
  p.usable = true;
  p.e0 = __int_as_float(s_scratch()[SCRATCH_F0]);
  p.e1 = __int_as_float(s_scratch()[SCRATCH_F1]);
  __syncthreads();
  return p;
}

// Phase 1 of a row whose view is usable: `add_view()` adds the view's samples to s_hist and
// returns the thread's largest (with_sample); the view's largest lands in SCRATCH_TOP (view_top)
// and the proposal comes from the histogram. Every thread calls.
template <class ViewHist>
__device__ __forceinline__ ProposalResult propose_from_view(bool tail, ViewHist&& add_view) {
  clear_hist(COARSE_BINS);
  if (threadIdx.x == 0) s_scratch()[SCRATCH_TOP] = 0;
  __syncthreads();
  fold_view_top(add_view());
  __syncthreads();
  return proposal_from_hist(tail);
}

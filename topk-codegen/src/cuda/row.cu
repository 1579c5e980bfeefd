// ---- Per-row state, row sources and the route decision. ----
// Route codes (ROUTE_*), status bits (STATUS_*) and the launch's words come from the prelude
// (topk_codegen::interface).

// Per-thread view of the CTA's row state; the rest lives at fixed shared offsets (block.cu).
struct RowCtx {
  int* spill;     // this worker's global frontier continuation
  int spill_cap;  // pairs per spill buffer
  bool nan;       // this thread saw a NaN
  bool tail;      // the row proposes at the tail margin (TAIL_RANK)
};

// The row's view phase (eq. 13): the same as the CPU backend's `Spec::view_phase`.
__device__ __forceinline__ int view_phase(int row) {
  return (int)(((u32)row * 17u + 13u) & (u32)(STRIDE - 1));
}

// The route of a row whose view proposed a usable boundary (Table 2), from the certificate:
// primary when the count at the primary endpoint reaches K; else, with a rescue band, rescue
// when the count down to the rescue endpoint reaches K (`rescue_count` runs only then: it may
// collect the band); else recovery. The cluster kernel decides here. select_row, the KV-split
// finisher and the stage chain write the same decision out: called from them, NVRTC compiles
// their kernels differently throughout (scripts/cubin-hashes.sh, scripts/sass-diff.py), and
// their compiled code is kept as measured.
template <class N, class F>
__device__ __forceinline__ int sampled_route(N primary_count, F&& rescue_count) {
  if (primary_count >= (N)K) return ROUTE_PRIMARY;
  if (!RESCUE) return ROUTE_RECOVERY;
  return rescue_count() >= (N)K ? ROUTE_RESCUE : ROUTE_RECOVERY;
}

// Thread 0 zeroes the row's frontier, output and tie counters and its NaN flag (a barrier
// follows before use).
__device__ __forceinline__ void reset_row_counters() {
  if (threadIdx.x == 0) {
    *s_counter(C_COUNT) = 0;
    *s_counter(C_OUT) = 0;
    *s_counter(C_TIES) = 0;
    *s_counter(C_NAN) = 0;
  }
}

// A row streamed from global memory.
struct GlobalRow {
  const score_t* p;
  int L;
  template <class F> __device__ __forceinline__ void for_each(F&& f) const { stream_row(p, L, f); }
  // The certification pass: reads the row for the last time on its route (stream_row's
  // EVICT_FIRST); vectors of four scores below `lo` are skipped, the others go whole to `quad`
  // and the scores outside the batched body to `f` (stream_row's GATE).
  template <class F, class Q>
  __device__ __forceinline__ void for_each_last_read_from(float lo, F&& f, Q&& quad) const {
    stream_row<true, true>(p, L, f, lo, quad);
  }
  // Warp-uniform scalar walk (every thread the same number of calls, valid flag per slot).
  template <class F> __device__ __forceinline__ void for_each_uniform(F&& f) const {
    for (int base = 0; base < L; base += THREADS) {
      const int i = base + threadIdx.x;
      const bool v = i < L;
      f(v ? load_cg(p + i) : 0.0f, i, v);
    }
  }
};

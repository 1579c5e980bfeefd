// ---- Row-local exact mapping (§5.5): one wide CTA per row, exact coarse boundary, no view. ----

// A row held in registers: loaded once, then every pass reads registers (short rows).
struct RegisterRow {
  float v[REG_ITEMS];
  int L;
  __device__ __forceinline__ void load(const score_t* __restrict__ p, int len) {
    L = len;
#pragma unroll
    for (int it = 0; it < REG_ITEMS; ++it) {
      const int i = it * THREADS + threadIdx.x;
      v[it] = i < L ? load_cg(p + i) : 0.0f;
    }
  }
  template <class F> __device__ __forceinline__ void for_each(F&& f) const {
#pragma unroll
    for (int it = 0; it < REG_ITEMS; ++it) {
      const int i = it * THREADS + threadIdx.x;
      if (i < L) f(v[it], i);
    }
  }
  // Registers hold no vectors: every score goes to f.
  template <class F, class Q>
  __device__ __forceinline__ void for_each_last_read_from(float, F&& f, Q&&) const {
    for_each(f);
  }
  template <class F> __device__ __forceinline__ void for_each_uniform(F&& f) const {
#pragma unroll
    for (int it = 0; it < REG_ITEMS; ++it) {
      const int i = it * THREADS + threadIdx.x;
      f(v[it], i, i < L);
    }
  }
};

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
ENTRY(ENTRY_PARAMS) {
  int m = *live_rows;
  if (m > m_cap || m < 0) {
    if (threadIdx.x == 0 && blockIdx.x == 0) atomicOr(control + CONTROL_STATUS, STATUS_BAD_ROWS);
    m = m < 0 ? 0 : m_cap;
  }
  RowCtx c = make_ctx(spill, spill_cap);
#if CALL_IO
  const CallArgs call = CALL_ARGS;
  if constexpr (SORT_KEYS_STAGED) stage_sort_keys(spill, spill_cap);
#endif
  for (int row = blockIdx.x; row < m; row += gridDim.x) {
#if CALL_IO
    const RowSpan span =
        begin_call_row(call, scores, pitch, row, width, out_pitch, control + CONTROL_STATUS);
    int L = span.L;
    const score_t* row_ptr = scores + (long long)row * pitch + span.start;
#else
    int L = checked_length(lengths, row, width, control);
    const score_t* row_ptr = scores + (long long)row * pitch;
#endif
    int q0 = 0;
    int route;
    if (REGISTER_ROW) {
      if (L > REG_ITEMS * THREADS) {
        // Longer than the register tile: reported as a bad length (the planner never does this).
        if (threadIdx.x == 0) atomicOr(control + CONTROL_STATUS, STATUS_BAD_LENGTH);
        L = 0;
      }
      RegisterRow src;
      src.load(row_ptr, L);
      route = select_row(src, row_ptr, L, 0, out + (long long)row * out_pitch, c, q0);
    } else {
      GlobalRow src;
      src.p = row_ptr;
      src.L = L;
      route = select_row(src, row_ptr, L, 0, out + (long long)row * out_pitch, c, q0);
    }
#if CALL_IO
    finish_call_row(out + (long long)row * out_pitch, L);
#endif
    finish_row(c, row, route, q0, control, row_info);
  }
}

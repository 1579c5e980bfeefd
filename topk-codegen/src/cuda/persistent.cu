// ---- Persistent mapping (§4.5, §5.5): one CTA owns a row; a worker pool claims rows. ----
// The control block's work cursor and exit counter are restored to 0 by the last CTA out, so a
// graph replays without a memset. `spill` holds, per worker, the global continuation of both
// ping-pong frontiers: 4 * spill_cap words.

// With a stagger, the second half of the grid (on an H200 the second CTA of most SMs) starts
// STAGGER_NS late, so the two CTAs of an SM propose and refine their rows (chains that leave
// DRAM idle) at different times and the one streaming takes up the other's share. Only when
// the call has at least three live rows per worker: the plan chose the stagger for its row
// capacity (the default map from 1024 rows, about four per worker on an H200), and with a row
// or two per worker the late half would end the call late.
__device__ __forceinline__ u64 global_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void stagger_start(int m) {
  if (STAGGER_NS > 0 && blockIdx.x >= gridDim.x / 2 && m >= 3 * (int)gridDim.x) {
    if (threadIdx.x == 0) {
      const u64 t0 = global_ns();
      do __nanosleep(500);
      while (global_ns() - t0 < STAGGER_NS);
    }
    __syncthreads();
  }
}

// Spec::in_tail: the last TAIL_ROWS rows of a call of more than TAIL_ROWS and at most
// TAIL_MAX_WAVES * TAIL_ROWS live rows propose at the tail margin. Rows are claimed in order, so
// these are the last ones a pool of TAIL_ROWS workers starts; a band rescue on one of them
// would end the call late.
__device__ __forceinline__ bool in_tail(int row, int m) {
  return TAIL_ROWS > 0 && m > TAIL_ROWS && m <= TAIL_MAX_WAVES * TAIL_ROWS && row >= m - TAIL_ROWS;
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
ENTRY(ENTRY_PARAMS) {
  __shared__ int next_row;
  RowCtx c = make_ctx(spill, spill_cap);
  int m = *live_rows;
  if (m > m_cap || m < 0) {
    if (threadIdx.x == 0 && blockIdx.x == 0) atomicOr(control + CONTROL_STATUS, STATUS_BAD_ROWS);
    m = m < 0 ? 0 : m_cap;
  }
  stagger_start(m);
#if CALL_IO
  const CallArgs call = CALL_ARGS;
  if constexpr (SORT_KEYS_STAGED) stage_sort_keys(spill, spill_cap);
#endif
  for (int row = blockIdx.x; row < m;) {
#if CALL_IO
    const RowSpan span =
        begin_call_row(call, scores, pitch, row, width, out_pitch, control + CONTROL_STATUS);
    const int L = span.L;
    const score_t* row_ptr = scores + (long long)row * pitch + span.start;
#else
    const int L = checked_length(lengths, row, width, control);
    const score_t* row_ptr = scores + (long long)row * pitch;
#endif
    GlobalRow src;
    src.p = row_ptr;
    src.L = L;
    int q0 = 0;
    const int phase = SAMPLED ? view_phase(row) : 0;
    c.tail = in_tail(row, m);
    const int route = select_row(src, row_ptr, L, phase, out + (long long)row * out_pitch, c, q0);
#if CALL_IO
    finish_call_row(out + (long long)row * out_pitch, L);
#endif
    finish_row(c, row, route, q0, control, row_info);
    if (threadIdx.x == 0) next_row = (int)gridDim.x + atomicAdd(reinterpret_cast<int*>(control + CONTROL_CURSOR), 1);
    __syncthreads();
    row = next_row;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    __threadfence();
    const u32 done = atomicAdd(control + CONTROL_EXITS, 1u);
    if (done == gridDim.x - 1) {
      control[CONTROL_CURSOR] = 0u;
      control[CONTROL_EXITS] = 0u;
      __threadfence();
    }
  }
}

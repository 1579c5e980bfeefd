// ---- Phase 1 with a grouped view (paper §4.2, eq. 13 grouped): VIEW_RUN contiguous scores
// every VIEW_RUN * STRIDE positions, group g at (phase + g * STRIDE) * VIEW_RUN. The same number
// of samples as the stride view from 1/VIEW_RUN of its 32-byte sectors; a group is one aligned
// vector load when the row base allows (group starts are multiples of VIEW_RUN), else scalar
// loads. The CPU backend walks the same positions (topk_runtime::cpu::view).
constexpr int VIEW_PERIOD = VIEW_RUN * STRIDE;

// The VIEW_RUN scores of a group at a sizeof(score_t) * VIEW_RUN byte aligned address.
#if SCORE_BITS == 16
__device__ __forceinline__ void load_group(const score_t* p, float (&v)[VIEW_RUN]) {
  u32 w[4];  // two scores a word, the lower position in the low half
  if constexpr (VIEW_RUN == 2) {
    asm("ld.global.cg.u32 %0, [%1];" : "=r"(w[0]) : "l"(p));
  } else if constexpr (VIEW_RUN == 4) {
    asm("ld.global.cg.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
  } else {
    const uint4 q = load_cg4(reinterpret_cast<const uint4*>(p));
    w[0] = q.x;
    w[1] = q.y;
    w[2] = q.z;
    w[3] = q.w;
  }
#pragma unroll
  for (int o = 0; o < VIEW_RUN; ++o) v[o] = widen_score((w[o >> 1] >> (16 * (o & 1))) & 0xffffu);
}
#else
__device__ __forceinline__ void load_group(const float* p, float (&v)[VIEW_RUN]) {
  if constexpr (VIEW_RUN == 2) {
    asm("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(v[0]), "=f"(v[1]) : "l"(p));
  } else {
#pragma unroll
    for (int h = 0; h < VIEW_RUN / 4; ++h) {
      const float4 q = load_cg4(reinterpret_cast<const float4*>(p) + h);
      v[4 * h] = q.x;
      v[4 * h + 1] = q.y;
      v[4 * h + 2] = q.z;
      v[4 * h + 3] = q.w;
    }
  }
}
#endif

// Groups in the view of a row of length L (the last may be cut short by L).
__device__ __forceinline__ int view_groups(int L, int phase) {
  const int first = phase * VIEW_RUN;
  return L > first ? (L - first - 1) / VIEW_PERIOD + 1 : 0;
}

// Samples in the view of a row of length L.
__device__ __forceinline__ int view_samples(int L, int phase) {
  const int groups = view_groups(L, phase);
  return groups == 0 ? 0
                     : (groups - 1) * VIEW_RUN +
                           min(VIEW_RUN, L - (phase * VIEW_RUN + (groups - 1) * VIEW_PERIOD));
}

// The view's groups that start in [a, b): groups .x .. .y - 1 (a cluster CTA's segment; a
// group may run past b, never past L).
__device__ __forceinline__ int2 view_span(int L, int phase, int a, int b) {
  const int first = phase * VIEW_RUN;
  return make_int2(a > first ? (a - first + VIEW_PERIOD - 1) / VIEW_PERIOD : 0,
                   view_groups(min(b, L), phase));
}

// Adds the samples of groups g0 .. groups - 1 to s_hist; returns this thread's largest sample as
// an ascending key (0 for none).
__device__ __forceinline__ u32 view_hist(const score_t* __restrict__ row, int L, int phase, int g0,
                                         int groups) {
  u32 top = 0u;
  const int first = phase * VIEW_RUN;
  const bool aligned = ((u32)(u64)row & ((u32)sizeof(score_t) * VIEW_RUN - 1u)) == 0u;
  for (int base = g0; base < groups; base += THREADS * VIEW_BATCH) {
    float v[VIEW_BATCH][VIEW_RUN];
#pragma unroll
    for (int u = 0; u < VIEW_BATCH; ++u) {
      const int g = base + u * THREADS + threadIdx.x;
      const long long start = first + (long long)g * VIEW_PERIOD;
      if (g < groups && aligned && start + VIEW_RUN <= L) {
        load_group(row + start, v[u]);
      } else {
#pragma unroll
        for (int o = 0; o < VIEW_RUN; ++o)
          v[u][o] = g < groups && start + o < L ? load_cg(row + start + o) : 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < VIEW_BATCH; ++u) {
      const int g = base + u * THREADS + threadIdx.x;
      const long long start = first + (long long)g * VIEW_PERIOD;
#pragma unroll
      for (int o = 0; o < VIEW_RUN; ++o) {
        if (g < groups && start + o < L) {
          atomicAdd(&s_hist()[coarse_bin(v[u][o])], 1);
          top = with_sample(top, v[u][o]);
        }
      }
    }
  }
  return top;
}

// Unusable when the view holds fewer samples than the deepest requested sample rank, or the row
// is shorter than EXACT_BELOW (the spec's `exact_below`).
__device__ ProposalResult propose_boundary(const score_t* __restrict__ row, int L, int phase,
                                          bool tail) {
  ProposalResult p;
  p.usable = false;
  p.e0 = quiet_nan();
  p.e1 = quiet_nan();
  if (view_samples(L, phase) < MIN_VIEW || L < EXACT_BELOW) return p;
  return propose_from_view(tail, [&] { return view_hist(row, L, phase, 0, view_groups(L, phase)); });
}

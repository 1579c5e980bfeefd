// ---- Phase 1 (paper §4.2, §5.2): a row-phased stride view proposes the coarse boundary. ----
// View V = {i < L : i mod STRIDE == phase} (eq. 13); coarse histogram (eq. 14); tau0, tau1 (eq. 15).
// Samples in the view of a row of length L.
__device__ __forceinline__ int view_samples(int L, int phase) {
  return L > phase ? (L - phase - 1) / STRIDE + 1 : 0;
}

// The view's samples at positions in [a, b): samples .x .. .y - 1 (a cluster CTA's segment).
__device__ __forceinline__ int2 view_span(int L, int phase, int a, int b) {
  return make_int2(a > phase ? (a - phase + STRIDE - 1) / STRIDE : 0, view_samples(min(b, L), phase));
}

// Adds samples j0 .. n - 1 (sample j at position phase + j * STRIDE) to s_hist; returns this
// thread's largest sample as an ascending key (0 for none).
__device__ __forceinline__ u32 view_hist(const score_t* __restrict__ row, int L, int phase, int j0,
                                         int n) {
  u32 top = 0u;
  for (int base = j0; base < n; base += THREADS * VIEW_BATCH) {
    float v[VIEW_BATCH];
#pragma unroll
    for (int u = 0; u < VIEW_BATCH; ++u) {
      int j = base + u * THREADS + threadIdx.x;
      v[u] = j < n ? load_cg(row + phase + (long long)j * STRIDE) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < VIEW_BATCH; ++u) {
      int j = base + u * THREADS + threadIdx.x;
      if (j < n) {
        atomicAdd(&s_hist()[coarse_bin(v[u])], 1);
        top = with_sample(top, v[u]);
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
  const int n = view_samples(L, phase);
  if (n < MIN_VIEW || L < EXACT_BELOW) return p;
  return propose_from_view(tail, [&] { return view_hist(row, L, phase, 0, n); });
}

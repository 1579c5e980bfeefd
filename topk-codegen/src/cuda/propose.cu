// ---- Phase 1 (paper §4.2, §5.2): a row-phased stride view proposes the coarse boundary. ----
// View V = {i < L : i mod STRIDE == phase} (eq. 13); coarse histogram (eq. 14); tau0, tau1 (eq. 15).
// Unusable when the view holds fewer samples than the deepest requested sample rank.
__device__ ProposalResult propose_boundary(const float* __restrict__ row, int L, int phase) {
  ProposalResult p;
  p.usable = false;
  p.e0 = quiet_nan();
  p.e1 = quiet_nan();
  const int n = L > phase ? (L - phase - 1) / STRIDE + 1 : 0;
  if (n < MIN_VIEW) return p;
  clear_hist(COARSE_BINS);
  __syncthreads();
  for (int base = 0; base < n; base += THREADS * VIEW_BATCH) {
    float v[VIEW_BATCH];
#pragma unroll
    for (int u = 0; u < VIEW_BATCH; ++u) {
      int j = base + u * THREADS + threadIdx.x;
      v[u] = j < n ? load_cg(row + phase + (long long)j * STRIDE) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < VIEW_BATCH; ++u) {
      int j = base + u * THREADS + threadIdx.x;
      if (j < n) atomicAdd(&s_hist()[coarse_bin(v[u])], 1);
    }
  }
  __syncthreads();
  return proposal_from_hist();
}

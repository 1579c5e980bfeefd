// ---- Phase 1 (paper §4.2, §5.2): a row-phased stride view proposes the coarse boundary. ----
struct ProposalResult {
  bool usable;
  float e0;  // inclusive FP32 endpoint of tau0 (target rank rho*K)
  float e1;  // inclusive FP32 endpoint of tau1 (rescue rank), when enabled
};

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
  const Boundary b0 = find_boundary<COARSE_BINS>(SAMPLE_RANK);
  const Boundary b1 = RESCUE ? find_boundary<COARSE_BINS>(RESCUE_RANK) : b0;
  if (threadIdx.x == 0) {
    s_scratch()[SCRATCH_F0] = __float_as_int(coarse_endpoint((u32)b0.bin));
    s_scratch()[SCRATCH_F1] = __float_as_int(coarse_endpoint((u32)b1.bin));
  }
  __syncthreads();
  p.usable = true;
  p.e0 = __int_as_float(s_scratch()[SCRATCH_F0]);
  p.e1 = __int_as_float(s_scratch()[SCRATCH_F1]);
  __syncthreads();
  return p;
}

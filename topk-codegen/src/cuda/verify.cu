// Exactness check of a Top-K output on the device (paper eq. 30 and the sentinel contract), one
// CTA per row, so every benchmark verifies the very output it timed without copying the scores
// back. flags[row]: 0 exact; otherwise the first failed property (see VERIFY_* below).
#define VERIFY_OK 0
#define VERIFY_RANGE 1       // an index outside [0, L) (or not -1 where a sentinel is due)
#define VERIFY_DUPLICATE 2   // an index twice
#define VERIFY_SENTINEL 3    // L <= K: not exactly {0..L-1} plus K-L sentinels
#define VERIFY_ORDER 4       // an unselected score exceeds the smallest selected one
#define VERIFY_LENGTH 5      // a length outside [0, width]

typedef unsigned int u32;

__device__ __forceinline__ void bitonic_sort(int* a, int n) {
  for (int size = 2; size <= n; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      __syncthreads();
      for (int i = threadIdx.x; i < n; i += blockDim.x) {
        int j = i ^ stride;
        if (j > i) {
          bool up = (i & size) == 0;
          int x = a[i], y = a[j];
          if ((x > y) == up) { a[i] = y; a[j] = x; }
        }
      }
    }
  }
  __syncthreads();
}

__device__ __forceinline__ int block_sum(int v, int* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  int total = 0;
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) total += red[w];
  return total;
}

extern "C" __global__ void topk_verify(const float* __restrict__ scores, long long pitch,
                                       const int* __restrict__ lengths, int rows, int width,
                                       const int* __restrict__ out, long long out_pitch, int k,
                                       int k_pow2, int* __restrict__ flags) {
  extern __shared__ int sorted[];  // k_pow2 ints
  __shared__ int red[32];
  __shared__ int verdict;
  __shared__ float smallest;
  const int row = blockIdx.x;
  if (row >= rows) return;
  const int L = lengths[row];
  if (threadIdx.x == 0) verdict = VERIFY_OK;
  if (L < 0 || L > width) { if (threadIdx.x == 0) flags[row] = VERIFY_LENGTH; return; }
  const int* o = out + (long long)row * out_pitch;
  for (int i = threadIdx.x; i < k_pow2; i += blockDim.x) sorted[i] = i < k ? o[i] : 0x7fffffff;
  bitonic_sort(sorted, k_pow2);
  const int want = L < k ? L : k;  // indices expected; the rest must be -1
  for (int i = threadIdx.x; i < k; i += blockDim.x) {
    const int v = sorted[i];
    const int rank = i - (k - want);  // position among the non-sentinel entries
    if (rank < 0) { if (v != -1) atomicMax(&verdict, VERIFY_SENTINEL); }
    else if (v < 0 || v >= L) atomicMax(&verdict, VERIFY_RANGE);
    else if (rank > 0 && sorted[i - 1] == v) atomicMax(&verdict, VERIFY_DUPLICATE);
    else if (L <= k && v != rank) atomicMax(&verdict, VERIFY_SENTINEL);
  }
  __syncthreads();
  if (verdict != VERIFY_OK || L <= k) { if (threadIdx.x == 0) flags[row] = verdict; return; }
  const float* x = scores + (long long)row * pitch;
  // Smallest selected score, then: exact iff no score above it is left out.
  float m = __uint_as_float(0x7f800000u);
  for (int i = threadIdx.x; i < k; i += blockDim.x) m = fminf(m, x[sorted[i]]);
  for (int o2 = 16; o2 > 0; o2 >>= 1) m = fminf(m, __shfl_down_sync(0xffffffffu, m, o2));
  if (threadIdx.x == 0) smallest = __uint_as_float(0x7f800000u);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
    float cur;  // float atomic min through compare-and-swap
    do { cur = smallest; if (!(m < cur)) break; } while (atomicCAS(reinterpret_cast<int*>(&smallest), __float_as_int(cur), __float_as_int(m)) != __float_as_int(cur));
  }
  __syncthreads();
  const float t = smallest;
  int sel_above = 0;
  for (int i = threadIdx.x; i < k; i += blockDim.x) sel_above += x[sorted[i]] > t ? 1 : 0;
  int all_above = 0;
  for (int i = threadIdx.x; i < L; i += blockDim.x) all_above += x[i] > t ? 1 : 0;
  const int a = block_sum(sel_above, red);
  __syncthreads();
  const int b = block_sum(all_above, red);
  if (threadIdx.x == 0) flags[row] = a == b ? VERIFY_OK : VERIFY_ORDER;
}

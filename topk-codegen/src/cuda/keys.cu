// ---- Ordered keys (paper §4.2 eq. 11-12, §4.4). Larger scores get smaller keys; -0 == +0. ----
__device__ __forceinline__ float canonical(float x) { return x == 0.0f ? 0.0f : x; }

// Descending sortable FP32 key. Adding +0 turns -0 into +0 and leaves every other non-NaN
// score as it is; then negative scores keep their bits and the others flip their 31 low bits.
// Three instructions: the band pass computes one per admitted score.
__device__ __forceinline__ u32 desc_key32(float x) {
  const u32 u = __float_as_uint(x + 0.0f);
  return u ^ (~(u32)((int)u >> 31) & 0x7fffffffu);
}

// Round-to-nearest FP16 projection, through the conversion instruction itself.
__device__ __forceinline__ u32 f16_bits_rn(float x) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}

// Descending sortable key of the FP16 projection; an FP16 -0 shares the +0 key.
__device__ __forceinline__ u32 desc_key16(float x) {
  u32 h = f16_bits_rn(canonical(x));
  if (h == 0x8000u) h = 0u;
  return (h & 0x8000u) ? h : (0x7fffu - h);
}

// Coarse bin c(x) (eq. 11).
__device__ __forceinline__ u32 coarse_bin(float x) { return desc_key16(x) >> COARSE_SHIFT; }

__device__ __forceinline__ float from_ascending(u32 a) {
  return __uint_as_float((a & 0x80000000u) ? (a & 0x7fffffffu) : ~a);
}

__device__ __forceinline__ float quiet_nan() { return __uint_as_float(0x7fc00000u); }

// Inclusive FP32 endpoint of a coarse prefix (§5.3): the smallest x with coarse_bin(x) <= bin,
// so that `coarse_bin(x) <= bin  <=>  x >= endpoint` for every non-NaN x. NaN (compares false)
// when no value reaches `bin`. Binary search over ascending FP32 keys; coarse_bin is monotone.
__device__ float coarse_endpoint(u32 bin) {
  u32 lo = 0x007fffffu;  // ascending key of -inf
  u32 hi = 0xff800000u;  // ascending key of +inf
  if (coarse_bin(from_ascending(hi)) > bin) return quiet_nan();
  while (lo < hi) {
    u32 mid = lo + (hi - lo) / 2;
    if (coarse_bin(from_ascending(mid)) <= bin) hi = mid; else lo = mid + 1;
  }
  return canonical(from_ascending(lo));
}

// coarse_endpoint by a whole warp: 32 probes per round split the key interval 33 ways, so
// about 7 rounds instead of 32 dependent steps. Same value in every lane, and the same value as
// coarse_endpoint (both find the smallest ascending key whose coarse bin is <= bin).
__device__ float coarse_endpoint_warp(u32 bin) {
  const u32 lane = threadIdx.x & 31u;
  u32 lo = 0x007fffffu;  // ascending key of -inf
  u32 hi = 0xff800000u;  // ascending key of +inf; the answer stays in [lo, hi]
  if (coarse_bin(from_ascending(hi)) > bin) return quiet_nan();
  while (lo < hi) {
    const u64 span = (u64)(hi - lo);
    const u32 probe = lo + (u32)(span * (lane + 1u) / 33u);
    const u32 ok = __ballot_sync(FULL_MASK, coarse_bin(from_ascending(probe)) <= bin);
    if (ok != 0u) {
      const u32 first = (u32)__ffs(ok) - 1u;
      hi = lo + (u32)(span * (first + 1u) / 33u);
      if (first > 0u) lo = lo + (u32)(span * first / 33u) + 1u;
    } else {
      lo = lo + (u32)(span * 32u / 33u) + 1u;
    }
  }
  return canonical(from_ascending(lo));
}

__device__ __forceinline__ u32 digit_of(u32 key, int j) {
  return (key >> digit_shift(j)) & ((1u << digit_width(j)) - 1u);
}

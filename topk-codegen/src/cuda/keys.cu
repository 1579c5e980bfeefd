// ---- Ordered keys (paper §4.2 eq. 11-12, §4.4). Larger scores get smaller keys; -0 == +0. ----
__device__ __forceinline__ float canonical(float x) { return x == 0.0f ? 0.0f : x; }

// Descending sortable FP32 key. Adding +0 turns -0 into +0 and leaves every other non-NaN
// score as it is; then negative scores keep their bits and the others flip their 31 low bits.
// Three instructions: the band pass computes one per admitted score.
__device__ __forceinline__ u32 desc_key32(float x) {
  const u32 u = __float_as_uint(x + 0.0f);
  return u ^ (~(u32)((int)u >> 31) & 0x7fffffffu);
}

// The score whose descending key is `key`: desc_key32's inverse, exact but for a zero, whose
// sign the key drops (both zeros come back as +0).
__device__ __forceinline__ float score_of_key(u32 key) {
  return __uint_as_float((key & 0x80000000u) ? key : key ^ 0x7fffffffu);
}

// Round-to-nearest FP16 projection, through the conversion instruction itself: the pair form
// with +0 in the upper half, so the result is a whole 32-bit register the compiler does not
// mask again after every operation on it.
__device__ __forceinline__ u32 f16_bits_rn(float x) {
  u32 h;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(0.0f), "f"(x));
  return h;
}

// Descending sortable key of the FP16 projection; an FP16 -0 (from -0 or a negative score
// that rounds to it) shares the +0 key 0x7fff. Non-negative bits (h <= 0x7fff) flip their 15
// low bits, negative ones keep them, and the masked difference takes h = 0x8000 to 0x7fff:
// one zero test instead of two, and no sign extension (codegen version 33).
__device__ __forceinline__ u32 desc_key16(float x) {
  const u32 h = f16_bits_rn(x);
  return h > 0x8000u ? h : ((0x7fffu - h) & 0x7fffu);
}

// Coarse bin c(x) (eq. 11). A bfloat16 score bins by the top bits of its own 16-bit key, which
// is the top half of its FP32 key (the CPU backend's keys::coarse_bin_of); an FP16 score's FP16
// projection is itself.
__device__ __forceinline__ u32 coarse_bin(float x) {
  if constexpr (SCORE_BF16) return desc_key32(x) >> (16u + COARSE_SHIFT);
  return desc_key16(x) >> COARSE_SHIFT;
}

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

__device__ __forceinline__ u32 to_ascending(float x) {
  const u32 u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Exact FP32 value of FP16 bits.
__device__ __forceinline__ float f32_of_f16(u32 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)h));
  return f;
}

// FP16 bits whose descending key (desc_key16) is `key`.
__device__ __forceinline__ u32 f16_of_key(u32 key) { return (key & 0x8000u) ? key : 0x7fffu - key; }

// coarse_endpoint without the search, in a few dozen instructions. The smallest FP16 value v of
// the bin (the value of its largest key that occurs) is reached by every x that rounds to v or
// above: the endpoint is the midpoint of v and the FP16 value below it (exact in FP32), or the
// next float up when the midpoint rounds down (ties to even). `checked` tells whether the
// result passed the definition itself, coarse_bin(e) <= bin < coarse_bin(float below e); the
// GPU tests assert that it does for every bin of every coarse width.
__device__ __forceinline__ float coarse_endpoint_closed(u32 bin, bool& checked) {
  u32 key = (bin << COARSE_SHIFT) | ((1u << COARSE_SHIFT) - 1u);  // largest key of the bin
  checked = true;
  if (key < 0x03ffu) return quiet_nan();  // FP16 NaN keys only: no value reaches the bin
  if (key >= 0xfc00u) return __uint_as_float(0xff800000u);  // -inf's key or above: every value
  if (key == 0x8000u) key = 0x7fffu;  // an FP16 -0 takes the +0 key: 0x8000 never occurs
  const u32 below = key + 1u == 0x8000u ? 0x8001u : key + 1u;  // next key that occurs
  const u32 hv = f16_of_key(key), hw = f16_of_key(below);
  // +-inf as +-65536, the next step of the largest binade, for the midpoint.
  const float v = hv == 0x7c00u ? 65536.0f : f32_of_f16(hv);
  const float w = hw == 0xfc00u ? -65536.0f : f32_of_f16(hw);
  float e = 0.5f * (v + w);
  if (coarse_bin(e) > bin) e = from_ascending(to_ascending(e) + 1u);
  checked = coarse_bin(e) <= bin && coarse_bin(from_ascending(to_ascending(e) - 1u)) > bin;
  return canonical(e);
}

// coarse_endpoint of a bfloat16 bin: the value of the bin's largest FP32 key, as every key up to
// it lies in this bin or an earlier one.
__device__ __forceinline__ float bf16_coarse_endpoint(u32 bin) {
  const u32 key = ((bin + 1u) << (16u + COARSE_SHIFT)) - 1u;  // wraps to ~0 past the last bin
  if (key < 0x007fffffu) return quiet_nan();  // below +inf's key: NaN keys only
  if (key >= 0xff800000u) return __uint_as_float(0xff800000u);  // -inf's key or above
  return __uint_as_float((key & 0x80000000u) ? key : key ^ 0x7fffffffu);  // never -0: low bits set
}

// coarse_endpoint in closed form, falling back to the search if the check ever failed.
__device__ __forceinline__ float coarse_endpoint_fast(u32 bin) {
  if constexpr (SCORE_BF16) return bf16_coarse_endpoint(bin);
  bool checked;
  const float e = coarse_endpoint_closed(bin, checked);
  return checked ? e : coarse_endpoint(bin);
}

__device__ __forceinline__ u32 digit_of(u32 key, int j) {
  return (key >> digit_shift(j)) & ((1u << digit_width(j)) - 1u);
}

//! CUDA source of the test-matrix generator (DESIGN §6): one counter-based formula that
//! `topk_runtime::data` evaluates on the CPU with identical FP32 bits.
//!
//! Bit equality rests on three rules that both sides follow:
//! - hashing uses 32-bit wrapping integer operations only;
//! - integer -> float conversions are exact (24-bit draws, then a power-of-two scale) or
//!   round-to-nearest on both sides;
//! - every float operation is a single IEEE add, sub, mul or div, written here as
//!   `__fadd_rn`/`__fsub_rn`/`__fmul_rn`/`__fdiv_rn` so that NVRTC cannot contract a pair into
//!   an FMA, in the same order as the Rust code (which never contracts). No transcendental
//!   functions, no arithmetic that could produce a subnormal (subnormals are built from bits),
//!   so `-ftz` does not change a bit either.
//!
//! The constants below are shared with the Rust implementation, which imports them.

/// Name of the generator's `extern "C" __global__` entry point.
pub const GENERATOR_ENTRY: &str = "topk_generate";

/// Stable numeric profile codes: the `profile` argument of the kernel.
pub mod profile_code {
    pub const INDEXER: i32 = 0;
    pub const IID: i32 = 1;
    pub const ALL_EQUAL: i32 = 2;
    pub const TWO_VALUES: i32 = 3;
    pub const TIES_AT_K: i32 = 4;
    pub const SORTED_ASC: i32 = 5;
    pub const SORTED_DESC: i32 = 6;
    pub const PERIODIC: i32 = 7;
    pub const INFINITIES: i32 = 8;
    pub const SIGNED_ZEROS: i32 = 9;
    pub const SUBNORMALS: i32 = 10;
    pub const HUGE: i32 = 11;
    pub const TINY: i32 = 12;
    /// One past the largest code.
    pub const COUNT: i32 = 13;
}

/// Draw streams of one cell: independent 32-bit draws per purpose.
pub mod stream {
    /// Four draws summed into Irwin-Hall noise: streams `NOISE..NOISE + 4`.
    pub const NOISE: u32 = 0;
    /// Chooses the kind of a cell (hot token, tie, infinity, nonzero, ...).
    pub const MODE: u32 = 4;
    /// The value of a cell once its kind is known.
    pub const VALUE: u32 = 5;
    /// Sign bits.
    pub const SIGN: u32 = 6;
}

/// Multipliers of the 32-bit avalanche (the murmur3 finalizer).
pub const MIX_MUL_A: u32 = 0x85eb_ca6b;
pub const MIX_MUL_B: u32 = 0xc2b2_ae35;
/// Starting word of a row key, before the seed and row words are folded in.
pub const ROW_BASIS: u32 = 0x6a09_e667;
/// Odd step between the pre-mix words of consecutive columns.
pub const COL_STEP: u32 = 0x9e37_79b9;
/// Odd step between the tags of consecutive draw streams.
pub const STREAM_STEP: u32 = 0x27d4_eb2f;
/// Column index standing for "the whole row" in per-row draws (never a real column: widths
/// are below 2^31).
pub const ROW_COLUMN: u32 = u32::MAX;
/// Largest `k` the formulas use; larger requests are clamped (as `k < 1` is raised to 1).
pub const MAX_PROFILE_K: u32 = 1 << 24;

/// `indexer`: scale of the centred Irwin-Hall noise (range +-2 before scaling).
pub const INDEXER_NOISE_SCALE: f32 = 0.5;
/// `indexer`: height of the attention-sink term `h / (1 + i / w)` at position 0.
pub const INDEXER_SINK_HEIGHT: f32 = 4.0;
/// `indexer`: sink width per unit of K (K = 2048 -> 64 positions).
pub const INDEXER_SINK_WIDTH_PER_K: f32 = 0.03125;
/// `indexer`: height of the recency term `h / (1 + d / w)`, `d = L - 1 - i`.
pub const INDEXER_RECENCY_HEIGHT: f32 = 4.0;
/// `indexer`: recency width per unit of K (K = 2048 -> 1024 positions).
pub const INDEXER_RECENCY_WIDTH_PER_K: f32 = 0.5;
/// `indexer`: a hot token or passage adds `h * (0.5 + u)`, u uniform in [0, 1).
pub const INDEXER_HOT_HEIGHT: f32 = 3.0;
/// `indexer`: expected scattered hot tokens per row are `3K/8`, whatever the row's length.
pub const INDEXER_HOT_PER_8K: u32 = 3;
/// `indexer`: expected hot passages per row. The row is cut into blocks of K/2 positions; a
/// hot block's passage covers its first `K/16 + U[0, K/8)` positions.
pub const INDEXER_PASSAGES: u32 = 2;
/// Column tag of per-block draws (never a real column: widths are below 2^31).
pub const BLOCK_COLUMN_TAG: u32 = 0x8000_0000;
/// `iid`: subtracted from the Irwin-Hall sum of four uniforms (range [0, 4)).
pub const IID_OFFSET: f32 = 3.5;
/// `periodic`: the period of the large values (the paper's wide-row stride); a power of two.
pub const PERIOD: u32 = 128;
const _: () = assert!(PERIOD.is_power_of_two());

/// The `#define` name of each profile code, as the kernel's `switch` spells it.
const PROFILE_DEFINES: [(&str, i32); profile_code::COUNT as usize] = [
    ("TOPK_PROFILE_INDEXER", profile_code::INDEXER),
    ("TOPK_PROFILE_IID", profile_code::IID),
    ("TOPK_PROFILE_ALL_EQUAL", profile_code::ALL_EQUAL),
    ("TOPK_PROFILE_TWO_VALUES", profile_code::TWO_VALUES),
    ("TOPK_PROFILE_TIES_AT_K", profile_code::TIES_AT_K),
    ("TOPK_PROFILE_SORTED_ASC", profile_code::SORTED_ASC),
    ("TOPK_PROFILE_SORTED_DESC", profile_code::SORTED_DESC),
    ("TOPK_PROFILE_PERIODIC", profile_code::PERIODIC),
    ("TOPK_PROFILE_INFINITIES", profile_code::INFINITIES),
    ("TOPK_PROFILE_SIGNED_ZEROS", profile_code::SIGNED_ZEROS),
    ("TOPK_PROFILE_SUBNORMALS", profile_code::SUBNORMALS),
    ("TOPK_PROFILE_HUGE", profile_code::HUGE),
    ("TOPK_PROFILE_TINY", profile_code::TINY),
];

/// A float as a C literal that parses back to the same bits (shortest round-trip digits).
fn float_literal(x: f32) -> String {
    let text = format!("{x:?}");
    if text.contains(['.', 'e']) {
        format!("{text}f")
    } else {
        format!("{text}.0f")
    }
}

/// The shared constants as `#define`s, so the body below is plain CUDA.
fn prelude() -> String {
    let mut s = String::from(
        "// Test-matrix generator: a counter-based formula shared bit for bit with the CPU\n\
         // generator (topk_runtime::data). Self-contained: NVRTC builtins only.\n",
    );
    let ints: [(&str, u32); 12] = [
        ("TOPK_GEN_MIX_A", MIX_MUL_A),
        ("TOPK_GEN_MIX_B", MIX_MUL_B),
        ("TOPK_GEN_ROW_BASIS", ROW_BASIS),
        ("TOPK_GEN_COL_STEP", COL_STEP),
        ("TOPK_GEN_STREAM_STEP", STREAM_STEP),
        ("TOPK_GEN_ROW_COLUMN", ROW_COLUMN),
        ("TOPK_GEN_MAX_K", MAX_PROFILE_K),
        ("TOPK_GEN_HOT_PER_8K", INDEXER_HOT_PER_8K),
        ("TOPK_GEN_PASSAGES", INDEXER_PASSAGES),
        ("TOPK_GEN_BLOCK_TAG", BLOCK_COLUMN_TAG),
        ("TOPK_GEN_PERIOD", PERIOD),
        ("TOPK_GEN_S_NOISE", stream::NOISE),
    ];
    for (name, v) in ints {
        s.push_str(&format!("#define {name} {v:#010x}u\n"));
    }
    for (name, v) in [
        ("TOPK_GEN_S_MODE", stream::MODE),
        ("TOPK_GEN_S_VALUE", stream::VALUE),
        ("TOPK_GEN_S_SIGN", stream::SIGN),
    ] {
        s.push_str(&format!("#define {name} {v}u\n"));
    }
    for (name, v) in [
        ("TOPK_GEN_NOISE_SCALE", INDEXER_NOISE_SCALE),
        ("TOPK_GEN_SINK_HEIGHT", INDEXER_SINK_HEIGHT),
        ("TOPK_GEN_SINK_WIDTH_PER_K", INDEXER_SINK_WIDTH_PER_K),
        ("TOPK_GEN_RECENCY_HEIGHT", INDEXER_RECENCY_HEIGHT),
        ("TOPK_GEN_RECENCY_WIDTH_PER_K", INDEXER_RECENCY_WIDTH_PER_K),
        ("TOPK_GEN_HOT_HEIGHT", INDEXER_HOT_HEIGHT),
        ("TOPK_GEN_IID_OFFSET", IID_OFFSET),
    ] {
        s.push_str(&format!("#define {name} {}\n", float_literal(v)));
    }
    for (name, v) in PROFILE_DEFINES {
        s.push_str(&format!("#define {name} {v}\n"));
    }
    s
}

const BODY: &str = r#"
typedef unsigned int topk_gen_u32;
typedef unsigned long long topk_gen_u64;

// 32-bit avalanche (murmur3 finalizer): the only mixing step of the counter-based hash.
__device__ __forceinline__ topk_gen_u32 topk_gen_mix(topk_gen_u32 h) {
  h ^= h >> 16;
  h *= TOPK_GEN_MIX_A;
  h ^= h >> 13;
  h *= TOPK_GEN_MIX_B;
  h ^= h >> 16;
  return h;
}

// Key of a GLOBAL row: seed and row words folded in one at a time, so rows generated in
// pieces (row_offset) equal the rows of the whole matrix.
__device__ __forceinline__ topk_gen_u32 topk_gen_row_key(topk_gen_u64 seed, topk_gen_u64 row) {
  topk_gen_u32 h = TOPK_GEN_ROW_BASIS;
  h = topk_gen_mix(h ^ (topk_gen_u32)seed);
  h = topk_gen_mix(h ^ (topk_gen_u32)(seed >> 32));
  h = topk_gen_mix(h ^ (topk_gen_u32)row);
  h = topk_gen_mix(h ^ (topk_gen_u32)(row >> 32));
  return h;
}

// Key of cell (row, col); distinct columns of one row get distinct keys.
__device__ __forceinline__ topk_gen_u32 topk_gen_cell(topk_gen_u32 row_key, topk_gen_u32 col) {
  return topk_gen_mix(row_key + col * TOPK_GEN_COL_STEP);
}

// Draw number `stream` of a cell.
__device__ __forceinline__ topk_gen_u32 topk_gen_draw(topk_gen_u32 cell, topk_gen_u32 stream) {
  return topk_gen_mix(cell ^ ((stream + 1u) * TOPK_GEN_STREAM_STEP));
}

// Uniform on the 2^-24 grid of [0, 1): an exact conversion and an exact scale.
__device__ __forceinline__ float topk_gen_unit(topk_gen_u32 h) {
  return __fmul_rn(__uint2float_rn(h >> 8), 5.9604645e-8f);
}

// True with probability min(1, count / len), from 24 draw bits, in exact integer arithmetic.
__device__ __forceinline__ bool topk_gen_chance(topk_gen_u32 h, topk_gen_u32 count, topk_gen_u32 len) {
  return (topk_gen_u64)(h >> 8) * len < ((topk_gen_u64)count << 24);
}

__device__ __forceinline__ float topk_gen_sum4(topk_gen_u32 cell) {
  float a = topk_gen_unit(topk_gen_draw(cell, TOPK_GEN_S_NOISE + 0u));
  float b = topk_gen_unit(topk_gen_draw(cell, TOPK_GEN_S_NOISE + 1u));
  float c = topk_gen_unit(topk_gen_draw(cell, TOPK_GEN_S_NOISE + 2u));
  float d = topk_gen_unit(topk_gen_draw(cell, TOPK_GEN_S_NOISE + 3u));
  return __fadd_rn(__fadd_rn(a, b), __fadd_rn(c, d));
}

// h / (1 + t / (k * width_per_k)): a rational decay that halves at t = k * width_per_k.
__device__ __forceinline__ float topk_gen_decay(float height, float t, float kf, float width_per_k) {
  return __fdiv_rn(height, __fadd_rn(1.0f, __fdiv_rn(t, __fmul_rn(kf, width_per_k))));
}

// h * (0.5 + u): the boost of a hot token or passage.
__device__ __forceinline__ float topk_gen_boost(topk_gen_u32 h) {
  return __fmul_rn(TOPK_GEN_HOT_HEIGHT, __fadd_rn(0.5f, topk_gen_unit(h)));
}

// The passage boost at `col`, or 0: the row is cut into blocks of K/2 positions, about
// TOPK_GEN_PASSAGES of them hot; a hot block's passage is its first K/16 + U[0, K/8) positions.
__device__ __forceinline__ float topk_gen_passage(topk_gen_u32 row_key, topk_gen_u32 col, topk_gen_u32 len,
                                                  topk_gen_u32 k) {
  const topk_gen_u32 block_w = k >> 1 < 1u ? 1u : k >> 1;
  const topk_gen_u32 block = col / block_w;
  const topk_gen_u32 blocks = len / block_w + (len % block_w != 0u ? 1u : 0u);
  const topk_gen_u32 b = topk_gen_cell(row_key, TOPK_GEN_BLOCK_TAG | block);
  if (!topk_gen_chance(topk_gen_draw(b, TOPK_GEN_S_MODE), TOPK_GEN_PASSAGES, blocks)) return 0.0f;
  const topk_gen_u32 extra = (topk_gen_u32)(((topk_gen_u64)(topk_gen_draw(b, TOPK_GEN_S_SIGN) >> 8) * (k >> 3)) >> 24);
  if (col - block * block_w >= (k >> 4) + extra) return 0.0f;
  return topk_gen_boost(topk_gen_draw(b, TOPK_GEN_S_VALUE));
}

// Sparse-attention indexer scores: noise + sink (start of the row) + recency (end of the valid
// prefix) + about 3K/8 scattered hot tokens + about two hot passages.
__device__ float topk_gen_indexer(topk_gen_u32 row_key, topk_gen_u32 cell, topk_gen_u32 col, topk_gen_u32 len,
                                  topk_gen_u32 k) {
  float kf = __uint2float_rn(k);
  float noise = __fmul_rn(__fsub_rn(topk_gen_sum4(cell), 2.0f), TOPK_GEN_NOISE_SCALE);
  float sink = topk_gen_decay(TOPK_GEN_SINK_HEIGHT, __uint2float_rn(col), kf, TOPK_GEN_SINK_WIDTH_PER_K);
  float recency = topk_gen_decay(TOPK_GEN_RECENCY_HEIGHT, __uint2float_rn(len - 1u - col), kf,
                                 TOPK_GEN_RECENCY_WIDTH_PER_K);
  float x = __fadd_rn(__fadd_rn(noise, sink), recency);
  if (topk_gen_chance(topk_gen_draw(cell, TOPK_GEN_S_MODE), (k * TOPK_GEN_HOT_PER_8K) >> 3, len))
    x = __fadd_rn(x, topk_gen_boost(topk_gen_draw(cell, TOPK_GEN_S_VALUE)));
  return __fadd_rn(x, topk_gen_passage(row_key, col, len, k));
}

__device__ float topk_gen_value(int profile, topk_gen_u32 row_key, topk_gen_u64 row, topk_gen_u32 col,
                                topk_gen_u32 len, topk_gen_u32 k) {
  const topk_gen_u32 cell = topk_gen_cell(row_key, col);
  const float u = topk_gen_unit(topk_gen_draw(cell, TOPK_GEN_S_VALUE));
  switch (profile) {
    case TOPK_PROFILE_INDEXER:
      return topk_gen_indexer(row_key, cell, col, len, k);
    case TOPK_PROFILE_IID:  // exchangeable: Irwin-Hall sum of four uniforms, shifted
      return __fsub_rn(topk_gen_sum4(cell), TOPK_GEN_IID_OFFSET);
    case TOPK_PROFILE_ALL_EQUAL: {  // one value per row, in [-2, 2)
      topk_gen_u32 row_cell = topk_gen_cell(row_key, TOPK_GEN_ROW_COLUMN);
      return __fsub_rn(__fmul_rn(topk_gen_unit(topk_gen_draw(row_cell, TOPK_GEN_S_VALUE)), 4.0f), 2.0f);
    }
    case TOPK_PROFILE_TWO_VALUES: {  // +-1: half and half on even rows, about K ones on odd rows
      topk_gen_u32 m = topk_gen_draw(cell, TOPK_GEN_S_MODE);
      bool high = (row & 1ull) ? topk_gen_chance(m, k, len) : (m >> 31) != 0u;
      return high ? 1.0f : -1.0f;
    }
    case TOPK_PROFILE_TIES_AT_K: {  // ~3K/4 above, ~K/2 copies of 1.0 (ranks 3K/4..5K/4), rest below
      topk_gen_u32 m = topk_gen_draw(cell, TOPK_GEN_S_MODE);
      if (topk_gen_chance(m, k - k / 4u, len)) return __fadd_rn(2.0f, u);
      if (topk_gen_chance(m, k + k / 4u, len)) return 1.0f;
      return __fsub_rn(u, 1.0f);
    }
    case TOPK_PROFILE_SORTED_ASC:
      return __fdiv_rn(__uint2float_rn(col), __uint2float_rn(len));
    case TOPK_PROFILE_SORTED_DESC:
      return __fdiv_rn(__uint2float_rn(len - 1u - col), __uint2float_rn(len));
    case TOPK_PROFILE_PERIODIC:  // large values exactly on one residue class of the stride
      return (col & (TOPK_GEN_PERIOD - 1u)) == 0u ? __fadd_rn(4.0f, u) : u;
    case TOPK_PROFILE_INFINITIES: {  // +inf (2K of them on even rows, K/2 on odd), 1/8 -inf, finite rest
      topk_gen_u32 m = topk_gen_draw(cell, TOPK_GEN_S_MODE);
      topk_gen_u32 plus = (row & 1ull) ? k / 2u : 2u * k;
      if (topk_gen_chance(m, plus, len)) return __uint_as_float(0x7f800000u);
      if ((topk_gen_draw(cell, TOPK_GEN_S_SIGN) & 7u) == 0u) return __uint_as_float(0xff800000u);
      return __fsub_rn(__fmul_rn(u, 2.0f), 1.0f);
    }
    case TOPK_PROFILE_SIGNED_ZEROS: {  // +0 / -0 everywhere except about K/4 nonzeros of either sign
      topk_gen_u32 sign = (topk_gen_draw(cell, TOPK_GEN_S_SIGN) & 1u) << 31;
      if (topk_gen_chance(topk_gen_draw(cell, TOPK_GEN_S_MODE), k / 4u, len))
        return __uint_as_float(__float_as_uint(__fadd_rn(u, 0.25f)) | sign);
      return __uint_as_float(sign);
    }
    case TOPK_PROFILE_SUBNORMALS: {  // nonzero subnormals of either sign, built from bits
      topk_gen_u32 h = topk_gen_draw(cell, TOPK_GEN_S_VALUE);
      return __uint_as_float(((h & 1u) << 31) | (h >> 9) | 1u);
    }
    case TOPK_PROFILE_HUGE: {  // |x| in [65536, 2^30]: FP16 saturates, one coarse bin per sign
      float x = __fmul_rn(__fadd_rn(1.0f, __fmul_rn(u, 16384.0f)), 65536.0f);
      return (topk_gen_draw(cell, TOPK_GEN_S_SIGN) & 3u) == 0u ? -x : x;
    }
    case TOPK_PROFILE_TINY:  // |x| <= 2^-29 < 1e-8: FP16 flushes every value to zero
      return __fmul_rn(__fsub_rn(u, 0.5f), 3.7252903e-9f);
    default:  // unknown code: poison the row so the Top-K contract's NaN check reports it
      return __uint_as_float(0x7fc00000u);
  }
}

// Writes rows [0, rows) of out (row pitch `pitch` elements): the profile value at c < lengths[r],
// -inf at lengths[r] <= c < width (the masked suffix dense selectors need). Row r is global row
// row_offset + r. Grid-stride over rows (y) and columns (x): any launch shape gives the same
// matrix. Columns in [width, pitch) are not written.
extern "C" __global__ void topk_generate(float* out, long long pitch, int rows, int width, const int* lengths,
                                         unsigned long long seed, int profile, int k, long long row_offset) {
  const topk_gen_u32 kk = k < 1 ? 1u : ((topk_gen_u32)k > TOPK_GEN_MAX_K ? TOPK_GEN_MAX_K : (topk_gen_u32)k);
  const long long row_step = (long long)gridDim.y * blockDim.y;
  const long long col_step = (long long)gridDim.x * blockDim.x;
  for (long long r = (long long)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += row_step) {
    const topk_gen_u64 row = (topk_gen_u64)row_offset + (topk_gen_u64)r;
    const topk_gen_u32 row_key = topk_gen_row_key(seed, row);
    const int len = lengths[r];
    float* row_out = out + r * pitch;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < width; c += col_step) {
      row_out[c] = c < len ? topk_gen_value(profile, row_key, row, (topk_gen_u32)c, (topk_gen_u32)len, kk)
                           : __uint_as_float(0xff800000u);
    }
  }
}
"#;

/// The generator's complete CUDA source: self-contained (no `#include`), NVRTC-compilable,
/// entry point [`GENERATOR_ENTRY`] with the fixed signature
/// `(float* out, long long pitch, int rows, int width, const int* lengths,
///   unsigned long long seed, int profile, int k, long long row_offset)`.
pub fn generator_source() -> String {
    let mut s = prelude();
    s.push_str(BODY);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_literals_parse_back_to_the_same_bits() {
        for x in [
            INDEXER_NOISE_SCALE,
            INDEXER_SINK_HEIGHT,
            INDEXER_SINK_WIDTH_PER_K,
            INDEXER_RECENCY_HEIGHT,
            INDEXER_RECENCY_WIDTH_PER_K,
            INDEXER_HOT_HEIGHT,
            IID_OFFSET,
            5.960_464_5e-8,
            3.725_290_3e-9,
        ] {
            let text = float_literal(x);
            let parsed: f32 = text.trim_end_matches('f').parse().unwrap();
            assert_eq!(parsed.to_bits(), x.to_bits(), "{text}");
        }
        assert_eq!(5.960_464_5e-8f32, 2f32.powi(-24));
        assert_eq!(3.725_290_3e-9f32, 2f32.powi(-28));
    }

    #[test]
    fn source_is_self_contained_and_names_every_profile() {
        let s = generator_source();
        assert!(!s.contains("#include"));
        assert!(s.contains(&format!("extern \"C\" __global__ void {GENERATOR_ENTRY}(")));
        let mut codes: Vec<i32> = PROFILE_DEFINES.iter().map(|&(_, c)| c).collect();
        codes.sort_unstable();
        assert_eq!(codes, (0..profile_code::COUNT).collect::<Vec<_>>());
        for (name, _) in PROFILE_DEFINES {
            assert_eq!(
                s.matches(&format!("case {name}:")).count(),
                1,
                "{name} has no case"
            );
        }
        // Every float operation is an explicit round-to-nearest intrinsic: no bare `+ - * /`
        // between floats could be contracted into an FMA.
        assert!(!s.contains("fmaf") && !s.contains("__fmaf"));
    }
}

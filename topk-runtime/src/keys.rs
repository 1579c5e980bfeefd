//! Ordered keys shared by every backend (paper §4.2, §4.4). Larger scores get smaller keys.
//! `-0.0` is canonicalized to `+0.0` first, so equal scores always share a key.
//! The generated CUDA computes the same functions; the GPU tests compare them bit for bit.
//!
//! Per dtype ([`desc_key_of`], [`coarse_bin_of`]): an FP32 score refines over its 32-bit key
//! and bins by its FP16 projection; an FP16 or bfloat16 score refines over its own 16-bit key
//! ([`desc_key16_bits`], one formula for both formats) and bins by the top bits of that key,
//! which for FP16 is the projection itself. The CPU backend holds 16-bit scores widened to FP32
//! (exact), and computes their keys from the widened value.

use half::f16;
use topk_dsl::Dtype;

/// `-0.0 -> +0.0`; every other value unchanged.
#[inline(always)]
pub fn canonical(x: f32) -> f32 {
    if x == 0.0 {
        0.0
    } else {
        x
    }
}

/// Descending sortable 32-bit key of an FP32 score: `x > y <=> key(x) < key(y)`.
#[inline(always)]
pub fn desc_key32(x: f32) -> u32 {
    let u = canonical(x).to_bits();
    let ascending = if u & 0x8000_0000 != 0 {
        !u
    } else {
        u | 0x8000_0000
    };
    !ascending
}

/// Descending sortable key of the round-to-nearest FP16 projection (`cvt.rn.f16.f32`).
/// Values beyond +-65504 saturate to the infinity keys; tiny values flush towards zero.
#[inline(always)]
pub fn desc_key16(x: f32) -> u16 {
    let mut h = f16::from_f32(canonical(x)).to_bits();
    if h == 0x8000 {
        h = 0; // an FP16 -0 from a tiny negative score shares the +0 key
    }
    if h & 0x8000 != 0 {
        h
    } else {
        0x7fff - h
    }
}

/// Descending 16-bit key of an FP16 or bfloat16 score from its bits: `0x7fff - bits` for a
/// non-negative score, the bits themselves for a negative one, `-0` (`0x8000`) as `+0`. Larger
/// scores get smaller keys; equal scores (and only they) share one.
#[inline(always)]
pub fn desc_key16_bits(bits: u16) -> u16 {
    let h = if bits == 0x8000 { 0 } else { bits };
    if h & 0x8000 != 0 {
        h
    } else {
        0x7fff - h
    }
}

/// The refinement key of a score of `dtype` held as FP32 (a 16-bit score widened exactly):
/// [`desc_key32`] for FP32, [`desc_key16_bits`] of the score's own bits for FP16 and bfloat16.
#[inline(always)]
pub fn desc_key_of(dtype: Dtype, x: f32) -> u32 {
    match dtype {
        Dtype::F32 => desc_key32(x),
        // The FP16 projection of an FP16 value is the value.
        Dtype::F16 => desc_key16(x) as u32,
        // A bfloat16 is the top half of its FP32; so is its key.
        Dtype::Bf16 => desc_key32(x) >> 16,
    }
}

/// Coarse bin of a score of `dtype` held as FP32: [`coarse_bin`] (the FP16 projection) for FP32
/// and FP16, the top `16 - shift` bits of the 16-bit key for bfloat16.
#[inline(always)]
pub fn coarse_bin_of(dtype: Dtype, x: f32, shift: u32) -> u32 {
    match dtype {
        Dtype::F32 | Dtype::F16 => coarse_bin(x, shift),
        Dtype::Bf16 => desc_key32(x) >> (16 + shift),
    }
}

/// [`coarse_endpoint`] for the coarse bins of `dtype` ([`coarse_bin_of`]).
pub fn coarse_endpoint_of(dtype: Dtype, bin: u32, shift: u32) -> Option<f32> {
    match dtype {
        Dtype::F32 | Dtype::F16 => coarse_endpoint(bin, shift),
        Dtype::Bf16 => endpoint(bin, |x| coarse_bin_of(Dtype::Bf16, x, shift)),
    }
}

/// Coarse bin `c(x)` (paper eq. 11): the top `16 - shift` bits of the FP16 descending key.
#[inline(always)]
pub fn coarse_bin(x: f32, shift: u32) -> u32 {
    (desc_key16(x) as u32) >> shift
}

/// Smallest non-NaN FP32 value `e` with `coarse_bin(e) <= bin`, so that
/// `coarse_bin(x) <= bin <=> x >= e` for every non-NaN `x` (the inclusive endpoint, §5.3).
/// `None` when no value reaches `bin` (bins above +inf's are the FP16 NaN range).
pub fn coarse_endpoint(bin: u32, shift: u32) -> Option<f32> {
    endpoint(bin, |x| coarse_bin(x, shift))
}

/// Smallest non-NaN FP32 value `e` with `bin_of(e) <= bin`, for a `bin_of` that does not
/// increase with the value.
fn endpoint(bin: u32, bin_of: impl Fn(f32) -> u32) -> Option<f32> {
    // Binary search over ascending FP32 keys from -inf to +inf; coarse_bin is non-increasing.
    let from_ascending = |a: u32| -> f32 {
        let u = if a & 0x8000_0000 != 0 {
            a & 0x7fff_ffff
        } else {
            !a
        };
        f32::from_bits(u)
    };
    let (mut lo, mut hi) = (
        !f32::NEG_INFINITY.to_bits(),
        f32::INFINITY.to_bits() | 0x8000_0000,
    );
    if bin_of(from_ascending(hi)) > bin {
        return None;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if bin_of(from_ascending(mid)) <= bin {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(canonical(from_ascending(lo)))
}

/// Digit `j` of a descending FP32 key, given its right shift and width.
#[inline(always)]
pub fn digit(key: u32, shift: u32, width: u32) -> u32 {
    (key >> shift) & ((1u32 << width) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key32_orders_like_floats_and_merges_signed_zeros() {
        let xs = [
            f32::NEG_INFINITY,
            -1e30,
            -1.0,
            -f32::MIN_POSITIVE,
            -1e-45,
            0.0,
            1e-45,
            f32::MIN_POSITIVE,
            1.0,
            65504.0,
            1e30,
            f32::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(desc_key32(w[0]) > desc_key32(w[1]), "{} vs {}", w[0], w[1]);
        }
        assert_eq!(desc_key32(-0.0), desc_key32(0.0));
        assert_eq!(desc_key16(-0.0), desc_key16(0.0));
        assert_eq!(desc_key16(-1e-30), desc_key16(1e-30));
    }

    /// The generated CUDA (`topk-codegen/src/cuda/keys.cu`) computes the FP32 key in three
    /// instructions: `x + 0` (which turns -0 into +0 and leaves every other non-NaN value),
    /// then negative scores keep their bits and the others flip their 31 low bits. It must be
    /// the same function as `desc_key32` on every non-NaN input.
    #[test]
    fn three_instruction_key32_equals_the_reference_on_every_float_class() {
        let lean = |x: f32| {
            let u = (x + 0.0).to_bits();
            u ^ (!(((u as i32) >> 31) as u32) & 0x7fff_ffff)
        };
        let special = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::from_bits(0x8000_0001),
            f32::from_bits(0x007f_ffff),
            f32::from_bits(0x807f_ffff),
            f32::MAX,
            f32::MIN,
        ];
        let swept = (0..=u32::MAX / 40_503).map(|i| f32::from_bits(i * 40_503));
        let mut checked = 0;
        for x in special.into_iter().chain(swept).filter(|x| !x.is_nan()) {
            assert_eq!(lean(x), desc_key32(x), "{x:e} ({:#010x})", x.to_bits());
            checked += 1;
        }
        assert!(checked > 100_000);
    }

    /// Every FP16 and bfloat16 value: the 16-bit key computed from the bits equals the one
    /// computed from the widened value, orders like the values, and merges only the zeros.
    #[test]
    fn sixteen_bit_keys_order_every_value_and_collide_only_on_zeros() {
        use half::bf16;
        type Widen = fn(u16) -> f32;
        let widen: [(Dtype, Widen); 2] = [
            (Dtype::F16, |b| f16::from_bits(b).to_f32()),
            (Dtype::Bf16, |b| bf16::from_bits(b).to_f32()),
        ];
        for (dtype, widen) in widen {
            let mut all: Vec<(f32, u16)> = (0..=u16::MAX)
                .map(|b| (widen(b), b))
                .filter(|(x, _)| !x.is_nan())
                .collect();
            for &(x, bits) in &all {
                assert_eq!(
                    desc_key_of(dtype, x),
                    u32::from(desc_key16_bits(bits)),
                    "{x:e}"
                );
                assert_eq!(
                    coarse_bin_of(dtype, x, 5),
                    u32::from(desc_key16_bits(bits)) >> 5
                );
            }
            all.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
            for w in all.windows(2) {
                let (ka, kb) = (desc_key16_bits(w[0].1), desc_key16_bits(w[1].1));
                assert_eq!(
                    ka == kb,
                    w[0].0 == w[1].0,
                    "{dtype}: {} vs {}",
                    w[0].0,
                    w[1].0
                );
                assert!(ka <= kb, "{dtype}: {} before {}", w[0].0, w[1].0);
            }
        }
    }

    #[test]
    fn bf16_endpoints_split_the_line_at_their_bin_boundary() {
        let shift = 5;
        for x in [
            -3e38f32,
            -1.0,
            -1e-30,
            0.0,
            1e-40,
            0.5,
            1.0,
            7e4,
            3e38,
            f32::INFINITY,
        ] {
            let bin = coarse_bin_of(Dtype::Bf16, x, shift);
            let e = coarse_endpoint_of(Dtype::Bf16, bin, shift).unwrap();
            assert!(
                x >= e && coarse_bin_of(Dtype::Bf16, e, shift) <= bin,
                "{x:e}"
            );
            let below = f32::from_bits(if e > 0.0 {
                e.to_bits() - 1
            } else if e == 0.0 {
                0x8000_0001
            } else {
                e.to_bits() + 1
            });
            if e != f32::NEG_INFINITY {
                assert!(coarse_bin_of(Dtype::Bf16, below, shift) > bin, "{x:e}");
            }
        }
    }

    #[test]
    fn endpoint_splits_the_line_exactly_at_the_bin_boundary() {
        let shift = 5;
        let probes: Vec<f32> = (-3000..3000)
            .map(|i| i as f32 * 0.37)
            .chain([
                1e-8,
                -1e-8,
                7e4,
                -7e4,
                f32::INFINITY,
                f32::NEG_INFINITY,
                0.0,
            ])
            .collect();
        for &p in &probes {
            let bin = coarse_bin(p, shift);
            let e = coarse_endpoint(bin, shift).unwrap();
            assert!(p >= e, "{p} below endpoint {e} of its own bin");
            assert!(coarse_bin(e, shift) <= bin);
            let below = f32::from_bits(if e > 0.0 {
                e.to_bits() - 1
            } else if e == 0.0 {
                0x8000_0001
            } else {
                e.to_bits() + 1
            });
            if e != f32::NEG_INFINITY {
                assert!(
                    coarse_bin(below, shift) > bin,
                    "value below endpoint of bin {bin} still in it"
                );
            }
        }
    }
}

//! Ordered keys shared by every backend (paper §4.2, §4.4). Larger scores get smaller keys.
//! `-0.0` is canonicalized to `+0.0` first, so equal scores always share a key.
//! The generated CUDA computes the same functions; the GPU tests compare them bit for bit.

use half::f16;

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

/// Coarse bin `c(x)` (paper eq. 11): the top `16 - shift` bits of the FP16 descending key.
#[inline(always)]
pub fn coarse_bin(x: f32, shift: u32) -> u32 {
    (desc_key16(x) as u32) >> shift
}

/// Smallest non-NaN FP32 value `e` with `coarse_bin(e) <= bin`, so that
/// `coarse_bin(x) <= bin <=> x >= e` for every non-NaN `x` (the inclusive endpoint, §5.3).
/// `None` when no value reaches `bin` (bins above +inf's are the FP16 NaN range).
pub fn coarse_endpoint(bin: u32, shift: u32) -> Option<f32> {
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
    if coarse_bin(from_ascending(hi), shift) > bin {
        return None;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if coarse_bin(from_ascending(mid), shift) <= bin {
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

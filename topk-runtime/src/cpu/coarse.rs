//! Coarse bins `c(x)` (paper eq. 11) of many scores at once: the FP16 projection runs through
//! `half`'s slice conversion (F16C SIMD where the CPU has it), bin for bin the same as
//! [`keys::coarse_bin`] (checked against it at every rounding boundary in the tests below).
//! bfloat16 scores bin by the top bits of their own key (`keys::coarse_bin_of`).

use super::scan::first_nan;
use crate::keys;
use half::{f16, slice::HalfFloatSliceExt};
use topk_dsl::Dtype;

/// Scores converted to FP16 together.
pub(super) const BATCH: usize = 256;

/// Add the coarse bins of `scores` (at most [`BATCH`]) of `dtype` to `hist`; `Err(j)` if
/// `scores[j]` is the first NaN.
#[inline]
pub(super) fn add_coarse_bins(
    scores: &[f32],
    dtype: Dtype,
    shift: u32,
    hist: &mut [u32],
) -> Result<(), usize> {
    if let Some(j) = first_nan(scores) {
        return Err(j);
    }
    if dtype == Dtype::Bf16 {
        for &x in scores {
            hist[keys::coarse_bin_of(dtype, x, shift) as usize] += 1;
        }
        return Ok(());
    }
    let mut halves = [f16::ZERO; BATCH];
    let halves = &mut halves[..scores.len()];
    halves.convert_from_f32_slice(scores);
    for &bits in halves.reinterpret_cast() {
        hist[(desc_key16_of_bits(bits) >> shift) as usize] += 1;
    }
    Ok(())
}

/// Coarse histogram `h(b) = #{i : c(x_i) = b}` of a whole row of `dtype`; `Err(col)` at the
/// first NaN.
pub(super) fn coarse_histogram(
    row: &[f32],
    dtype: Dtype,
    shift: u32,
    hist: &mut [u32],
) -> Result<(), usize> {
    hist.fill(0);
    for (n, chunk) in row.chunks(BATCH).enumerate() {
        add_coarse_bins(chunk, dtype, shift, hist).map_err(|j| n * BATCH + j)?;
    }
    Ok(())
}

/// [`keys::desc_key16`] from the FP16 bits of an uncanonicalized score: an FP16 `-0` (from
/// `-0.0` or a tiny negative score) shares the `+0` key.
#[inline(always)]
fn desc_key16_of_bits(bits: u16) -> u32 {
    let h = if bits == 0x8000 { 0 } else { bits as u32 };
    if h & 0x8000 != 0 {
        h
    } else {
        0x7fff - h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every FP16 value, the FP32 midpoints between neighbours (where rounding decides) and the
    /// FP32 values on either side of each midpoint, both signs, plus the specials.
    fn rounding_probes() -> Vec<f32> {
        let mut probes = vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            1e-45,
            -1e-45,
            65504.0,
            65519.996,
            65520.0,
            -65520.0,
        ];
        let step =
            |x: f32, up: bool| f32::from_bits(if up { x.to_bits() + 1 } else { x.to_bits() - 1 });
        // The last finite gap, 65504 to infinity, is covered by the explicit 65520 probes above.
        for bits in 0..0x7bffu16 {
            let lo = f16::from_bits(bits).to_f32();
            let hi = f16::from_bits(bits + 1).to_f32();
            let mid = (lo as f64 + hi as f64) / 2.0;
            let mid = mid as f32;
            for x in [lo, mid, step(mid, true), hi] {
                probes.push(x);
                probes.push(-x);
            }
            if mid > 0.0 {
                probes.push(step(mid, false));
                probes.push(-step(mid, false));
            }
        }
        probes
    }

    #[test]
    fn batched_coarse_bins_match_the_shared_key_at_every_rounding_boundary() {
        let probes = rounding_probes();
        for shift in [0, 5, 8] {
            // Whole batches, so the SIMD conversion path is the one compared.
            for chunk in probes.chunks(BATCH) {
                let mut halves = [f16::ZERO; BATCH];
                let halves = &mut halves[..chunk.len()];
                halves.convert_from_f32_slice(chunk);
                for (&x, &bits) in chunk.iter().zip(halves.reinterpret_cast()) {
                    let bin = desc_key16_of_bits(bits) >> shift;
                    assert_eq!(
                        bin,
                        keys::coarse_bin(x, shift),
                        "score {x:e}, shift {shift}"
                    );
                }
                let mut batched = vec![0u32; 1 << (16 - shift)];
                coarse_histogram(chunk, Dtype::F32, shift, &mut batched).unwrap();
                let mut scalar = vec![0u32; 1 << (16 - shift)];
                for &x in chunk {
                    scalar[keys::coarse_bin(x, shift) as usize] += 1;
                }
                assert_eq!(batched, scalar, "shift {shift}");
            }
        }
    }

    #[test]
    fn coarse_histogram_reports_the_first_nan() {
        let mut row = vec![1.0f32; 700];
        row[517] = f32::NAN;
        row[650] = f32::NAN;
        let mut hist = vec![0; 2048];
        assert_eq!(coarse_histogram(&row, Dtype::F32, 5, &mut hist), Err(517));
        assert_eq!(coarse_histogram(&row, Dtype::Bf16, 5, &mut hist), Err(517));
    }
}

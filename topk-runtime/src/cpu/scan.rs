//! The streaming primitive of every complete-row pass: visit only the scores at or above a
//! threshold. The pass is branch-free: sixteen scores are compared at once, and the columns of
//! the hits (`!(x < t)`, so NaN too) are appended to a small staging buffer by table lookup
//! whether or not there are any; the buffer is drained into `visit` when it fills. Admitted
//! scores are rare and scattered, so a branch per hit would mispredict on a sizeable fraction
//! of the chunks.

use crate::keys;

/// Inclusive FP32 cutoff of a coarse prefix, `c(x) <= bin <=> x >= e` (paper §5.3);
/// `None` admits nothing (a bin in the FP16 NaN range, above +inf's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Cutoff(Option<f32>);

impl Cutoff {
    /// Admits exactly the scores whose coarse bin is at most `bin`.
    pub fn through_bin(bin: u32, shift: u32) -> Cutoff {
        Cutoff(keys::coarse_endpoint(bin, shift))
    }

    /// [`Cutoff::through_bin`] for the coarse bins of `dtype` (`keys::coarse_bin_of`).
    pub fn through_bin_of(dtype: topk_dsl::Dtype, bin: u32, shift: u32) -> Cutoff {
        Cutoff(keys::coarse_endpoint_of(dtype, bin, shift))
    }

    /// Admits nothing.
    pub const NONE: Cutoff = Cutoff(None);

    #[inline(always)]
    pub fn admits(self, x: f32) -> bool {
        matches!(self.0, Some(e) if x >= e)
    }

    /// A threshold `t` with `admits(x) => !(x < t)`, for the fast test of [`for_each_at_or_above`].
    pub fn scan_threshold(self) -> f32 {
        self.0.unwrap_or(f32::INFINITY)
    }
}

const LANES: usize = 16;
/// Staged columns that trigger a drain, early enough that their scores are still in L1; the
/// buffer has `LANES` slots of slack beyond.
const STAGE: usize = 128;

/// Column offsets of the set bits of every byte, padded with zeros, and their count. A `const`
/// rather than a `static`: with a `static` table the expansion below compiled to scalar stores
/// and the whole pass ran about 1.5x slower.
const SET_BITS: ([[u32; 8]; 256], [u8; 256]) = {
    let mut offsets = [[0u32; 8]; 256];
    let mut counts = [0u8; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut bit = 0;
        while bit < 8 {
            if byte & (1 << bit) != 0 {
                offsets[byte][counts[byte] as usize] = bit as u32;
                counts[byte] += 1;
            }
            bit += 1;
        }
        byte += 1;
    }
    (offsets, counts)
};

/// Reusable staging buffer of [`for_each_at_or_above`].
#[derive(Default)]
pub(super) struct Staging(Vec<u32>);

/// Calls `visit(col, x)` for every `x` in `row` with `!(x < t)` (so also for NaN), in column
/// order, stopping at the first error.
#[inline(always)]
pub(super) fn for_each_at_or_above<E>(
    row: &[f32],
    t: f32,
    staging: &mut Staging,
    mut visit: impl FnMut(usize, f32) -> Result<(), E>,
) -> Result<(), E> {
    staging.0.resize(STAGE + LANES, 0);
    let staged = &mut staging.0[..];
    let mut drain = |cols: &[u32]| -> Result<(), E> {
        for &col in cols {
            visit(col as usize, row[col as usize])?;
        }
        Ok(())
    };
    let mut filled = 0;
    let mut chunks = row.chunks_exact(LANES);
    for (n, chunk) in (&mut chunks).enumerate() {
        let hits = hits16(chunk.try_into().unwrap(), t);
        let base = (n * LANES) as u32;
        filled = append_set_bits(staged, filled, base, hits & 0xff);
        filled = append_set_bits(staged, filled, base + 8, hits >> 8);
        if filled >= STAGE {
            drain(&staged[..filled])?;
            filled = 0;
        }
    }
    drain(&staged[..filled])?;
    let tail = row.len() - chunks.remainder().len();
    for (j, &x) in chunks.remainder().iter().enumerate() {
        if reaches(x, t) {
            visit(tail + j, x)?;
        }
    }
    Ok(())
}

/// `!(x < t)`: at or above the threshold, or NaN (one `cmpnltps` lane).
#[inline(always)]
fn reaches(x: f32, t: f32) -> bool {
    x >= t || x.is_nan()
}

/// Bit `j` set iff `!(chunk[j] < t)`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn hits16(chunk: &[f32; LANES], t: f32) -> u32 {
    use std::arch::x86_64::{_mm_cmpnlt_ps, _mm_loadu_ps, _mm_movemask_ps, _mm_set1_ps};
    // SAFETY: SSE2 is part of the x86_64 baseline, and the four unaligned loads read exactly
    // the sixteen floats of `chunk`.
    unsafe {
        let t = _mm_set1_ps(t);
        let p = chunk.as_ptr();
        let m0 = _mm_movemask_ps(_mm_cmpnlt_ps(_mm_loadu_ps(p), t));
        let m1 = _mm_movemask_ps(_mm_cmpnlt_ps(_mm_loadu_ps(p.add(4)), t));
        let m2 = _mm_movemask_ps(_mm_cmpnlt_ps(_mm_loadu_ps(p.add(8)), t));
        let m3 = _mm_movemask_ps(_mm_cmpnlt_ps(_mm_loadu_ps(p.add(12)), t));
        (m0 | m1 << 4 | m2 << 8 | m3 << 12) as u32
    }
}

/// Bit `j` set iff `!(chunk[j] < t)`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn hits16(chunk: &[f32; LANES], t: f32) -> u32 {
    let mut hits = 0u32;
    for (j, &x) in chunk.iter().enumerate() {
        hits |= (reaches(x, t) as u32) << j;
    }
    hits
}

/// Write the columns `base + bit` of the set bits of `byte` at `staged[filled..]` (always eight
/// slots, so no branch) and return the new fill.
#[inline(always)]
fn append_set_bits(staged: &mut [u32], filled: usize, base: u32, byte: u32) -> usize {
    let slots: &mut [u32; 8] = (&mut staged[filled..filled + 8]).try_into().unwrap();
    let (offsets, counts) = (&SET_BITS.0[byte as usize], SET_BITS.1[byte as usize]);
    for (slot, &offset) in slots.iter_mut().zip(offsets) {
        *slot = base + offset;
    }
    filled + counts as usize
}

/// Column of the first NaN in `row`, if any.
pub(super) fn first_nan(row: &[f32]) -> Option<usize> {
    let mut chunks = row.chunks_exact(LANES);
    let mut base = 0;
    for chunk in &mut chunks {
        let mut nan = false;
        for &x in chunk {
            nan |= x.is_nan();
        }
        if nan {
            return chunk.iter().position(|x| x.is_nan()).map(|j| base + j);
        }
        base += LANES;
    }
    chunks
        .remainder()
        .iter()
        .position(|x| x.is_nan())
        .map(|j| base + j)
}

//! The streaming primitive of every complete-row pass: visit only the scores at or above a
//! threshold. Sixteen scores are tested together with one branch-free compare; the rare chunk
//! holding an admitted score (or a NaN, which `!(x < t)` also lets through) takes the slow path.

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

/// Calls `visit(col, x)` for every `x` in `row` with `!(x < t)` (so also for NaN), in column
/// order, stopping at the first error.
#[inline(always)]
pub(super) fn for_each_at_or_above<E>(
    row: &[f32],
    t: f32,
    mut visit: impl FnMut(usize, f32) -> Result<(), E>,
) -> Result<(), E> {
    let mut chunks = row.chunks_exact(LANES);
    let mut base = 0;
    for chunk in &mut chunks {
        // One vector compare and a movemask; set bits are visited without further branches.
        let mut hits = 0u32;
        for (j, &x) in chunk.iter().enumerate() {
            hits |= ((!(x < t)) as u32) << j;
        }
        while hits != 0 {
            let j = hits.trailing_zeros() as usize;
            visit(base + j, chunk[j])?;
            hits &= hits - 1;
        }
        base += LANES;
    }
    for (j, &x) in chunks.remainder().iter().enumerate() {
        if !(x < t) {
            visit(base + j, x)?;
        }
    }
    Ok(())
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

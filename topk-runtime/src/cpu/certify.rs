//! Phase 2 (paper §4.3, §5.3): one complete-row pass compares every score with the proposed
//! FP32 cutoff, appends the admitted tail A(tau0) to the frontier, counts it (the containment
//! certificate C(tau0)) and builds its leading-digit histogram on first encounter. The rescue
//! pass appends only the band between the two cutoffs.

use super::params::Digit;
use super::refine::Frontier;
use super::scan::{for_each_at_or_above, Cutoff, Staging};
use crate::keys;

/// Append `A = {i : x_i >= cutoff}` to the frontier; also the authoritative NaN check of the
/// row (`Err(col)` at the first NaN), folded into the same compare.
pub(super) fn certify_and_collect(
    row: &[f32],
    cutoff: Cutoff,
    first: Digit,
    frontier: &mut Frontier,
    staging: &mut Staging,
) -> Result<(), usize> {
    for_each_at_or_above(row, cutoff.scan_threshold(), staging, |col, x| {
        if x.is_nan() {
            return Err(col);
        }
        if cutoff.admits(x) {
            frontier.admit(col, keys::desc_key32(x), first);
        }
        Ok(())
    })
}

/// Append the band `{i : x_i >= lower, not x_i >= upper}` (eq. 18-19): the scores the rescue
/// cutoff admits beyond the primary one. The row is known to be free of NaN.
pub(super) fn collect_band(
    row: &[f32],
    lower: Cutoff,
    upper: Cutoff,
    first: Digit,
    frontier: &mut Frontier,
    staging: &mut Staging,
) {
    let _ = for_each_at_or_above(row, lower.scan_threshold(), staging, |col, x| {
        if lower.admits(x) && !upper.admits(x) {
            frontier.admit(col, keys::desc_key32(x), first);
        }
        Ok::<(), ()>(())
    });
}

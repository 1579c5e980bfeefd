//! Phase 2 (paper §4.3, §5.3): one complete-row pass compares every score with the proposed
//! FP32 cutoff, appends the admitted tail A(tau0) to the frontier, counts it (the containment
//! certificate C(tau0)) and builds its leading-digit histogram on first encounter. The rescue
//! pass appends only the band between the two cutoffs.

use super::params::Params;
use super::refine::Frontier;
use super::scan::{for_each_at_or_above, Cutoff, Staging};

/// Append `A = {i : x_i >= cutoff}` to the frontier; also the authoritative NaN check of the
/// row (`Err(col)` at the first NaN), folded into the same compare.
pub(super) fn certify_and_collect(
    params: &Params,
    row: &[f32],
    cutoff: Cutoff,
    frontier: &mut Frontier,
    staging: &mut Staging,
) -> Result<(), usize> {
    let first = params.digits[0];
    for_each_at_or_above(row, cutoff.scan_threshold(), staging, |col, x| {
        if x.is_nan() {
            return Err(col);
        }
        if cutoff.admits(x) {
            frontier.admit(col, params.key(x), first);
        }
        Ok(())
    })
}

/// Append the band `{i : x_i >= lower, not x_i >= upper}` (eq. 18-19): the scores the rescue
/// cutoff admits beyond the primary one. The row is known to be free of NaN.
pub(super) fn collect_band(
    params: &Params,
    row: &[f32],
    lower: Cutoff,
    upper: Cutoff,
    frontier: &mut Frontier,
    staging: &mut Staging,
) {
    let first = params.digits[0];
    let _ = for_each_at_or_above(row, lower.scan_threshold(), staging, |col, x| {
        if lower.admits(x) && !upper.admits(x) {
            frontier.admit(col, params.key(x), first);
        }
        Ok::<(), ()>(())
    });
}

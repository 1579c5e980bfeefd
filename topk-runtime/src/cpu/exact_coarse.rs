//! The exact coarse route (paper eq. 20): a coarse histogram of the whole row gives the exact
//! boundary tau* = min { b : C(b) >= K }; a second pass commits every score in a better bin
//! and keeps the boundary bin as the frontier Q0.

use super::coarse::coarse_histogram;
use super::output::OutRow;
use super::params::Params;
use super::propose::first_bin_reaching;
use super::refine::Frontier;
use super::scan::{for_each_at_or_above, Cutoff, Staging};

/// Build E0 (written to `out`), Q0 and its leading-digit histogram; returns k0 = K - |E0|.
/// `Err(col)` reports the first NaN.
pub(super) fn exact_coarse_frontier(
    params: &Params,
    row: &[f32],
    coarse_hist: &mut [u32],
    frontier: &mut Frontier,
    staging: &mut Staging,
    out: &mut OutRow,
) -> Result<usize, usize> {
    coarse_histogram(row, params.dtype, params.coarse_shift, coarse_hist)?;
    let boundary = first_bin_reaching(coarse_hist, params.k as u32);
    let admitted = params.cutoff(boundary);
    let better = match boundary {
        0 => Cutoff::NONE,
        b => params.cutoff(b - 1),
    };
    let first = params.digits[0];
    frontier.reset(first);
    let _ = for_each_at_or_above(row, admitted.scan_threshold(), staging, |col, x| {
        if better.admits(x) {
            out.push(col as u32);
        } else if admitted.admits(x) {
            frontier.admit(col, params.key(x), first);
        }
        Ok::<(), ()>(())
    });
    Ok(params.k - out.filled())
}

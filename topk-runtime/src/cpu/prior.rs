//! A row's prior boundary (`prior=P/R`, `topk_dsl::Prior`): the row proposes from a boundary
//! the caller passes (the K-th largest score of the same row at the previous decode step) before
//! its view. The prior's cutoff is certified by the same one-pass count as a sampled one, so the
//! output never depends on the prior: a prior that underfills, or admits more than
//! `Spec::prior_cap` scores, leaves the row to the spec's own proposal.

use super::certify::{certify_and_collect, collect_band};
use super::params::Params;
use super::refine::Frontier;
use super::scan::Staging;
use crate::{keys, Route};

/// The prior's margins: its cutoff and its rescue band's end, in coarse bins below the prior's.
#[derive(Clone, Copy, Debug)]
pub(super) struct PriorBins {
    pub primary: u32,
    pub rescue: u32,
}

/// Tries the row's prior `p` (not NaN): `Some(route)` with the frontier holding the certified
/// candidates, `None` when the prior underfilled or admitted more than the cap (the frontier is
/// then to be reset). `Err(col)`: the row's first NaN (this pass is the row's NaN check).
pub(super) fn certify_prior(
    params: &Params,
    bins: PriorBins,
    p: f32,
    row: &[f32],
    frontier: &mut Frontier,
    staging: &mut Staging,
) -> Result<Option<Route>, usize> {
    let last_bin = params.coarse_bins as u32 - 1;
    let bin = keys::coarse_bin_of(params.dtype, p, params.coarse_shift).min(last_bin);
    let primary = params.cutoff((bin + bins.primary).min(last_bin));
    frontier.reset(params.digits[0]);
    certify_and_collect(params, row, primary, frontier, staging)?;
    let certified = |frontier: &Frontier, route| {
        let n = frontier.current.len();
        (n >= params.k && n <= params.prior_cap).then_some(route)
    };
    if frontier.current.len() >= params.k {
        return Ok(certified(frontier, Route::PriorPrimary));
    }
    if bins.rescue > bins.primary {
        let rescue = params.cutoff((bin + bins.rescue).min(last_bin));
        collect_band(params, row, rescue, primary, frontier, staging);
        return Ok(certified(frontier, Route::PriorRescue));
    }
    Ok(None)
}

/// The boundary a row writes (`boundary=true`): the K-th largest of its scores, the smallest
/// selected one (`-0.0` written as `+0.0`, as the kernels write it from its key); NaN for a row
/// of `L <= K`, whose next step then proposes without a prior.
pub(super) fn row_boundary(row: &[f32], slots: &[i32], k: usize) -> f32 {
    if row.len() <= k {
        return f32::NAN;
    }
    let smallest = slots
        .iter()
        .map(|&i| row[i as usize])
        .fold(f32::INFINITY, f32::min);
    keys::canonical(smallest)
}

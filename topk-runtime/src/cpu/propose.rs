//! Phase 1 (paper §4.2): a coarse histogram of the row's stride view proposes the primary
//! boundary tau0 and, when enabled, the nested rescue boundary tau1, as FP32 cutoffs.

use super::coarse::{add_coarse_bins, BATCH};
use super::params::{Params, Sampling};
use super::scan::{first_nan, Cutoff};
use super::view::{view_len, view_positions};

/// The boundaries a usable view proposes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Proposal {
    pub primary: Cutoff,
    pub rescue: Option<Cutoff>,
}

/// The proposal for row `row_index`, or `None` when its view (`super::view`; the stride view
/// `{i < L : i % s == a}` when `run = 1`) holds too few samples or the row is shorter than
/// `exact_below`. `Err(col)`: the view met a NaN; `col` is the row's first.
pub(super) fn propose_boundary(
    params: &Params,
    sampling: &Sampling,
    row_index: usize,
    row: &[f32],
    coarse_hist: &mut [u32],
) -> Result<Option<Proposal>, usize> {
    let phase = params.view_phase(row_index);
    let (stride, run) = (sampling.stride, sampling.run);
    if row.len() < sampling.exact_below
        || view_len(row.len(), phase, stride, run) < sampling.min_view_len
    {
        return Ok(None);
    }
    coarse_hist.fill(0);
    // Gather a batch of samples first: the strided loads are independent, so their cache
    // misses overlap, and the batch converts to FP16 in SIMD.
    let mut samples = [0f32; BATCH];
    let mut cols = view_positions(row.len(), phase, stride, run);
    loop {
        let mut n = 0;
        for (sample, col) in samples.iter_mut().zip(&mut cols) {
            *sample = row[col];
            n += 1;
        }
        if n == 0 {
            break;
        }
        if add_coarse_bins(
            &samples[..n],
            params.dtype,
            params.coarse_shift,
            coarse_hist,
        )
        .is_err()
        {
            return Err(first_nan(row).unwrap_or(0)); // the row's first NaN, like every pass
        }
    }
    let rank = match sampling.tail_rank {
        Some(tail) if params.spec.in_tail(row_index as u64, params.call_rows) => tail,
        _ => sampling.rank,
    };
    let primary = params.cutoff(first_bin_reaching(coarse_hist, rank));
    let rescue = sampling
        .rescue_rank
        .map(|q1| params.cutoff(first_bin_reaching(coarse_hist, q1)));
    Ok(Some(Proposal { primary, rescue }))
}

/// `min { b : H(b) >= rank }` for the inclusive prefix `H` of `hist`; the caller guarantees that
/// the histogram holds at least `rank` entries (the last bin otherwise).
pub(super) fn first_bin_reaching(hist: &[u32], rank: u32) -> u32 {
    let mut prefix = 0u64;
    for (bin, &count) in hist.iter().enumerate() {
        prefix += count as u64;
        if prefix >= rank as u64 {
            return bin as u32;
        }
    }
    hist.len().saturating_sub(1) as u32
}

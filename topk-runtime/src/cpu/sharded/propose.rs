//! Phase 1 on one rank: the coarse histogram of the samples of each row's stride view that lie
//! in this rank's shard. After the all-reduce every rank holds the single-device histogram of
//! the whole view, and reads the same boundaries off it.

use super::super::params::{Params, Sampling};
use super::super::propose::{first_bin_reaching, Proposal};
use super::super::scan::Cutoff;
use super::scores::Shard;
use crate::keys;
use rayon::prelude::*;

/// The sampling of the row's view `{p < L : p mod s == phase}` when it is used: the spec
/// samples, the row is longer than K and the view holds at least `min_view_len` samples.
/// Every rank knows it from `L` alone.
pub(super) fn usable_view_sampling(params: &Params, row: usize, len: usize) -> Option<&Sampling> {
    let sampling = params.sampling.as_ref()?;
    let phase = params.view_phase(row);
    let view_len = len.saturating_sub(phase).div_ceil(sampling.stride);
    (len > params.k && view_len >= sampling.min_view_len).then_some(sampling)
}

/// `rows x coarse_bins`: row `r`'s bins count this rank's samples of its view (zero for rows
/// without a usable view). NaN samples are skipped; the certify pass reports them.
pub(super) fn view_histograms_of_shard(params: &Params, shard: &Shard) -> Vec<u32> {
    let bins = params.coarse_bins;
    let mut hist = vec![0u32; shard.rows() * bins];
    hist.par_chunks_mut(bins)
        .enumerate()
        .for_each(|(row, hist)| {
            let Some(sampling) = usable_view_sampling(params, row, shard.global_len(row)) else {
                return;
            };
            let stride = sampling.stride;
            let phase = params.view_phase(row);
            // The first global position at or after the shard's start on the view's residue class.
            let first = (phase + stride - shard.offset() % stride) % stride;
            for &x in shard.valid(row).iter().skip(first).step_by(stride) {
                if !x.is_nan() {
                    hist[keys::coarse_bin(x, params.coarse_shift) as usize] += 1;
                }
            }
        });
    hist
}

/// The boundaries of every row, read off the all-reduced histograms exactly as one device
/// does (`None`: no usable view).
pub(super) fn proposals_from_histograms(
    params: &Params,
    lengths: &[i32],
    hist: &[u32],
) -> Vec<Option<Proposal>> {
    let shift = params.coarse_shift;
    hist.chunks(params.coarse_bins)
        .zip(lengths)
        .enumerate()
        .map(|(row, (hist, &len))| {
            let sampling = usable_view_sampling(params, row, len as usize)?;
            let through_rank = |rank| Cutoff::through_bin(first_bin_reaching(hist, rank), shift);
            Some(Proposal {
                primary: through_rank(sampling.rank),
                rescue: sampling.rescue_rank.map(through_rank),
            })
        })
        .collect()
}

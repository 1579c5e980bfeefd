//! What a profile looks like to the selector (`topk-bench stats`) (paper §3.1 Observation 2, §6.4): how much of the
//! exact top-K sits at the ends of the row, and how often the primary stride boundary
//! underfills.
//!
//! Measured on 4096-row terminal windows at K = 2048 (N = 128K, 256K, 1M): `indexer` puts
//! 60-61% of its exact top-K in the outer deciles (paper: 52-74%) and underfills 0.22-0.29% of
//! rows (paper: 0.40-0.86% on captured rows); `iid` puts 20% there and underfills 2.6-3.1%.
//! The profiles' structure scales with K, but a fixed stride does not: at K <= 1024 the view
//! holds only `ceil(1.5 K / 128) <= 12` samples above the target and underfills far more often.

use rayon::prelude::*;
use topk_dsl::{Centi, Proposal, Spec};

use topk_runtime::data::route_rates::for_each_causal_block;
use topk_runtime::data::Profile;
use topk_runtime::keys::desc_key32;
use topk_runtime::{cpu, Result, Route};

/// Stride of the view whose underfill is measured (the paper's wide-row policy).
pub const UNDERFILL_STRIDE: u32 = 128;
/// Primary target rank `rho * K` of that view.
pub const UNDERFILL_RHO: Centi = Centi(150);

/// Rows generated and selected at a time: a multiple of the stride, so every row keeps the view
/// phase it has in the whole window.
const CHUNK_ROWS: usize = UNDERFILL_STRIDE as usize;

/// Statistics of one profile over a terminal causal window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProfileStats {
    /// Mean over rows of the fraction of the exact top-K indices in the first or last position
    /// decile of `[0, L)` (paper Fig. 3c: 52-74% on captured indexer rows, 20% if uniform).
    pub endpoint_share: f64,
    /// Fraction of rows whose primary boundary (stride 128, rho 1.5, no rescue) admits fewer
    /// than K scores, so that the row falls back to exact recovery.
    pub underfill_rate: f64,
    /// Rows measured: those with `L > K`.
    pub rows: usize,
}

/// The primary-only sampled policy whose underfill [`profile_stats`] measures.
pub fn primary_only_spec(k: u32) -> Spec {
    Spec {
        k,
        proposal: Proposal::Sampled {
            stride: UNDERFILL_STRIDE,
            rho: UNDERFILL_RHO,
            rescue: None,
            exact_below: 0,
        },
        ..Spec::default()
    }
}

/// Endpoint share and primary underfill of `profile` over the terminal causal window of `rows`
/// rows ending at `width` (row `r` has length `width - rows + r + 1`), generated with `seed`
/// and rank `k`. Rows are generated 128 at a time, so memory stays at `128 * width` scores.
pub fn profile_stats(
    profile: Profile,
    rows: usize,
    width: usize,
    seed: u64,
    k: u32,
) -> Result<ProfileStats> {
    let spec = primary_only_spec(k);
    let k_len = k as usize;
    let mut indices = vec![0i32; CHUNK_ROWS * k_len];
    let (mut measured, mut underfilled, mut share_sum) = (0usize, 0usize, 0f64);
    for_each_causal_block(
        CHUNK_ROWS,
        profile,
        rows,
        width,
        seed,
        k,
        |first_row, scores| {
            let chunk_lengths = scores.lengths;
            let stats = cpu::select_rows_from(
                &spec,
                scores,
                first_row,
                rows as u64,
                &mut indices,
                k_len,
                true,
            )?;
            let routes = stats.per_row.unwrap_or_default();
            let long_rows: Vec<usize> = (0..scores.rows)
                .filter(|&r| chunk_lengths[r] as usize > k_len)
                .collect();
            measured += long_rows.len();
            underfilled += long_rows
                .iter()
                .filter(|&&r| routes.get(r) == Some(&Route::Recovery))
                .count();
            share_sum += long_rows
                .par_iter()
                .map(|&r| endpoint_share(scores.row(r), k_len))
                .sum::<f64>();
            Ok(())
        },
    )?;
    let rate = |count: f64| {
        if measured == 0 {
            0.0
        } else {
            count / measured as f64
        }
    };
    Ok(ProfileStats {
        endpoint_share: rate(share_sum),
        underfill_rate: rate(underfilled as f64),
        rows: measured,
    })
}

/// Fraction of the exact top-`k` of `row` (`row.len() > k`; ties to the smaller index) that
/// lies in the first or last tenth of the row.
fn endpoint_share(row: &[f32], k: usize) -> f64 {
    let len = row.len() as u64;
    let mut keyed: Vec<u64> = row
        .iter()
        .enumerate()
        .map(|(i, &x)| (u64::from(desc_key32(x)) << 32) | i as u64)
        .collect();
    keyed.select_nth_unstable(k - 1);
    let at_ends = keyed[..k]
        .iter()
        .filter(|&&key| {
            let i = key & 0xffff_ffff;
            10 * i < len || 10 * i >= 9 * len
        })
        .count();
    at_ends as f64 / k as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_share_counts_the_outer_tenths() {
        // Top 4 of 100 at positions 0, 9 (first tenth), 50 (middle), 90 (last tenth).
        let mut row = vec![0.0f32; 100];
        for (i, v) in [(0, 5.0), (9, 4.0), (50, 3.0), (90, 2.0)] {
            row[i] = v;
        }
        assert_eq!(endpoint_share(&row, 4), 0.75);
        // Ties at rank k go to the smaller index: position 10 (middle) beats 95.
        row[10] = 1.0;
        row[95] = 1.0;
        assert_eq!(endpoint_share(&row, 5), 0.6);
    }
}

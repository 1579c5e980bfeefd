//! What a profile looks like to the selector (paper §3.1 Observation 2, §6.4): how much of the
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

use super::shapes::causal_window;
use super::{generate, Profile};
use crate::keys::desc_key32;
use crate::{cpu, Error, Result, Route, RouteStats, ScoreMatrix};

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
    for_each_block(profile, rows, width, seed, k, |first_row, scores| {
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
    })?;
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

/// Route shares and candidate volume of one Spec over a profile (the CPU backend takes the
/// same route as the GPU kernels on every row, so these are the GPU's rates too).
#[derive(Clone, Debug, PartialEq)]
pub struct RouteRates {
    /// Rows with `L > K` (the ones a route is chosen for).
    pub rows: usize,
    /// Fractions of those rows per route: primary, band rescue, exact recovery, direct exact.
    pub primary: f64,
    pub rescue: f64,
    pub recovery: f64,
    pub direct: f64,
    /// Mean initial refinement frontier |Q0| per row.
    pub mean_candidates: f64,
}

/// One row of [`row_outcomes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowOutcome {
    /// Valid length of the row.
    pub length: i32,
    pub route: Route,
    /// Initial refinement frontier |Q0| (0 for rows of at most K scores).
    pub candidates: u64,
}

/// The route and |Q0| of every row of `spec` on the terminal causal window of `rows` rows ending
/// at `width` (the data [`route_rates`] summarizes; the GPU kernels take the same route and
/// admit the same candidates on every row, which the GPU tests check). Lines up with a phase
/// probe's timeline of `examples/05-operator-matrix` at seed 1, whose data this is.
pub fn row_outcomes(
    profile: Profile,
    rows: usize,
    width: usize,
    seed: u64,
    spec: &Spec,
) -> Result<Vec<RowOutcome>> {
    let k_len = spec.k as usize;
    let mut indices = vec![0i32; CHUNK_ROWS * k_len];
    let mut out = Vec::with_capacity(rows);
    for_each_block(profile, rows, width, seed, spec.k, |first_row, scores| {
        // Each block keeps its rows' global view phases.
        let stats = cpu::select_rows_from(
            spec,
            scores,
            first_row,
            rows as u64,
            &mut indices,
            k_len,
            true,
        )?;
        let (routes, candidates) = (
            stats.per_row.unwrap_or_default(),
            stats.per_row_candidates.unwrap_or_default(),
        );
        if routes.len() != scores.rows || candidates.len() != scores.rows {
            return Err(Error::Input(format!(
                "the CPU backend returned {} routes and {} frontiers for {} rows",
                routes.len(),
                candidates.len(),
                scores.rows
            )));
        }
        for ((route, candidates), &length) in routes.into_iter().zip(candidates).zip(scores.lengths)
        {
            out.push(RowOutcome {
                length,
                route,
                candidates,
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// [`RouteRates`] of `spec` on the terminal causal window of `rows` rows ending at `width`: the
/// summary of its [`row_outcomes`].
pub fn route_rates(
    profile: Profile,
    rows: usize,
    width: usize,
    seed: u64,
    spec: &Spec,
) -> Result<RouteRates> {
    let outcomes = row_outcomes(profile, rows, width, seed, spec)?;
    let stats = RouteStats::from_rows(outcomes.iter().map(|o| (o.route, o.candidates)), false);
    let long = (stats.total_rows() - stats.count(Route::Short)) as usize;
    let per_long_row = |c: u64| {
        if long == 0 {
            0.0
        } else {
            c as f64 / long as f64
        }
    };
    Ok(RouteRates {
        rows: long,
        primary: per_long_row(stats.count(Route::Primary)),
        rescue: per_long_row(stats.count(Route::Rescue)),
        recovery: per_long_row(stats.count(Route::Recovery)),
        direct: per_long_row(stats.count(Route::DirectExact)),
        mean_candidates: per_long_row(stats.candidates),
    })
}

/// A view: `run` contiguous scores every `run * stride` positions, targeting rank `rho * K`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewShape {
    pub stride: u32,
    pub run: u32,
    pub rho: Centi,
}

/// How often a view's primary boundary underfills (C(tau0) < K, no rescue), for views of `run`
/// contiguous scores every `run * stride` positions: `run = 1` is the paper's stride view
/// (eq. 13), `run = 8` reads whole 32-byte sectors (eight contiguous FP32 scores) for the same
/// sample count, touching an eighth of the sectors. The group phase is the row's eq. 13 phase.
/// Returns the underfill rate over rows with `L > K` that have a usable view, and their count.
pub fn view_underfill(
    profile: Profile,
    rows: usize,
    width: usize,
    seed: u64,
    k: u32,
    view: ViewShape,
) -> Result<(f64, usize)> {
    use crate::keys::{coarse_bin, coarse_endpoint};
    let ViewShape { stride, run, rho } = view;
    let shift = 5; // 11-bit coarse key
    let q = (rho.0 as u64 * k as u64).div_ceil(100 * stride as u64) as usize;
    let (mut measured, mut underfilled) = (0usize, 0usize);
    for_each_block(profile, rows, width, seed, k, |first_row, scores| {
        let (chunk_lengths, data) = (scores.lengths, scores.data);
        let outcomes: Vec<Option<bool>> = (0..chunk_lengths.len())
            .into_par_iter()
            .map(|r| {
                let len = chunk_lengths[r] as usize;
                if len <= k as usize {
                    return None;
                }
                let row = &data[r * width..r * width + len];
                let global = first_row + r as u64;
                let phase =
                    ((global.wrapping_mul(17).wrapping_add(13)) & (stride as u64 - 1)) as usize;
                let mut hist = vec![0u32; 2048];
                let mut n = 0usize;
                for p in crate::cpu::view::view_positions(len, phase, stride as usize, run as usize)
                {
                    hist[coarse_bin(row[p], shift) as usize] += 1;
                    n += 1;
                }
                if n < q {
                    return None;
                }
                let mut prefix = 0usize;
                let tau = hist
                    .iter()
                    .position(|&c| {
                        prefix += c as usize;
                        prefix >= q
                    })
                    .unwrap_or(2047) as u32;
                let cut = coarse_endpoint(tau, shift).unwrap_or(f32::INFINITY);
                let admitted = row.iter().filter(|&&x| x >= cut).count();
                Some(admitted < k as usize)
            })
            .collect();
        for o in outcomes.into_iter().flatten() {
            measured += 1;
            underfilled += o as usize;
        }
        Ok(())
    })?;
    let rate = if measured == 0 {
        0.0
    } else {
        underfilled as f64 / measured as f64
    };
    Ok((rate, measured))
}

/// Generates the terminal causal window of `rows` rows ending at `width` in blocks of
/// CHUNK_ROWS rows (memory stays at CHUNK_ROWS x width scores) and hands each block, with the
/// global index of its first row, to `visit`.
fn for_each_block(
    profile: Profile,
    rows: usize,
    width: usize,
    seed: u64,
    k: u32,
    mut visit: impl FnMut(u64, &ScoreMatrix) -> Result<()>,
) -> Result<()> {
    let lengths = causal_window(rows, width);
    for (chunk, chunk_lengths) in lengths.chunks(CHUNK_ROWS).enumerate() {
        let first_row = (chunk * CHUNK_ROWS) as u64;
        let data = generate(profile, seed, k, first_row, chunk_lengths, width, width)?;
        let scores = ScoreMatrix {
            data: &data,
            rows: chunk_lengths.len(),
            width,
            pitch: width,
            lengths: chunk_lengths,
        };
        visit(first_row, &scores)?;
    }
    Ok(())
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

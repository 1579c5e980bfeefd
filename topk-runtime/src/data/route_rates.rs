//! What a proposal policy does on a generated profile (the statistics half of the paper's
//! §6.4 ablations, `topk routes`): the share of rows on each route, the initial frontier |Q0|
//! per row, and how often a sample view's primary boundary underfills. The CPU backend takes
//! the same route as the GPU kernels on every row, so these are the GPU's rates too.

use rayon::prelude::*;
use topk_dsl::{Centi, Spec};

use super::shapes::causal_window;
use super::{generate, Profile};
use crate::{cpu, Error, Result, Route, RouteStats, ScoreMatrix};

/// Rows generated and selected at a time (memory stays at this many rows of scores); each
/// block is selected at its rows' global indices, so the view phases are the whole window's.
const CHUNK_ROWS: usize = 128;

/// Route shares and candidate volume of one Spec over a profile (the CPU backend takes the
/// same route as the GPU kernels on every row, so these are the GPU's rates too).
#[derive(Clone, Debug, PartialEq)]
pub struct RouteRates {
    /// Rows with `L > K` (the ones a route is chosen for).
    pub rows: usize,
    /// Fraction of those rows certified by the primary boundary.
    pub primary: f64,
    /// Fraction certified by the band rescue.
    pub rescue: f64,
    /// Fraction that fell back to exact recovery.
    pub recovery: f64,
    /// Fraction sent to the direct exact route.
    pub direct: f64,
    /// Mean initial refinement frontier |Q0| per row.
    pub mean_candidates: f64,
}

/// One row of [`row_outcomes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowOutcome {
    /// Valid length of the row.
    pub length: i32,
    /// The route it took.
    pub route: Route,
    /// Initial refinement frontier |Q0| (0 for rows of at most K scores).
    pub candidates: u64,
}

/// The route and |Q0| of every row of `spec` on the terminal causal window of `rows` rows ending
/// at `width` (the data [`route_rates`] summarizes; the GPU kernels take the same route and
/// admit the same candidates on every row, which the GPU tests check). Lines up with a phase
/// probe's timeline of the harness's `operator-matrix` at seed 1, whose data this is.
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
    for_each_causal_block(
        CHUNK_ROWS,
        profile,
        rows,
        width,
        seed,
        spec.k,
        |first_row, scores| {
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
            for ((route, candidates), &length) in
                routes.into_iter().zip(candidates).zip(scores.lengths)
            {
                out.push(RowOutcome {
                    length,
                    route,
                    candidates,
                });
            }
            Ok(())
        },
    )?;
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
    /// Positions between samples of the stride view (a power of two).
    pub stride: u32,
    /// Contiguous scores per sample group (1: the stride view).
    pub run: u32,
    /// Target rank as a multiple of K.
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
    for_each_causal_block(
        CHUNK_ROWS,
        profile,
        rows,
        width,
        seed,
        k,
        |first_row, scores| {
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
                    for p in
                        crate::cpu::view::view_positions(len, phase, stride as usize, run as usize)
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
        },
    )?;
    let rate = if measured == 0 {
        0.0
    } else {
        underfilled as f64 / measured as f64
    };
    Ok((rate, measured))
}

/// Generates the terminal causal window of `rows` rows ending at `width` in blocks of
/// `block_rows` rows (memory stays at `block_rows` x width scores) and hands each block, with
/// the global index of its first row, to `visit`: statistics over calls too large to hold.
///
/// # Errors
/// The generator's, and the first error `visit` returns.
pub fn for_each_causal_block(
    block_rows: usize,
    profile: Profile,
    rows: usize,
    width: usize,
    seed: u64,
    k: u32,
    mut visit: impl FnMut(u64, &ScoreMatrix) -> Result<()>,
) -> Result<()> {
    let lengths = causal_window(rows, width);
    for (chunk, chunk_lengths) in lengths.chunks(block_rows.max(1)).enumerate() {
        let first_row = (chunk * block_rows.max(1)) as u64;
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

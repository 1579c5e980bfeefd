//! The CPU selector: the paper's three phases per row, rows in parallel with rayon.

use super::certify::{certify_and_collect, collect_band};
use super::exact_coarse::exact_coarse_frontier;
use super::finish::sort_row;
use super::output::{write_short_row, OutRow};
use super::params::Params;
use super::prior::certify_prior;
use super::propose::propose_boundary;
use super::refine::Frontier;
use super::scan::{first_nan, Staging};
use crate::input::{check_indices, check_k, check_matrix};
use crate::{Error, Result, Route, RouteStats, ScoreMatrix};
use rayon::prelude::*;
use topk_dsl::{Dtype, Order, Rows, Spec, Transform};

/// Exact Top-K of every row of `scores` with the rank and policy of `spec`, into `out` (row
/// `r` in `out[r * out_pitch..][..K]`; slots past K are not touched). Indices inside a row come
/// in no particular order. The route each row took is counted in the returned statistics, and
/// listed per row when `per_row_routes` is set.
///
/// Fails, before writing any output when the shapes are wrong, on: an invalid spec, K outside
/// `1..=MAX_K`, a matrix that does not fit its buffer, a length outside `[0, width]`, an
/// index buffer too small, or a NaN among the valid scores (found while the rows are read).
///
/// The spec's `ties` and `order` are honoured; a spec of another dtype, or one whose interface
/// needs more inputs or outputs (values, row windows, decode rows, index transforms), is an
/// error that names [`super::select_with`], the entry point that takes them.
///
/// ```
/// use topk_dsl::Spec;
/// use topk_runtime::{cpu, Route, ScoreMatrix};
///
/// # fn main() -> topk_runtime::Result<()> {
/// let (rows, width, k) = (3, 20_000, 64);
/// let scores: Vec<f32> = (0..rows * width).map(|i| ((i * 7919) % 10_007) as f32).collect();
/// let lengths = [20_000, 9_000, 50]; // the last row has L <= K
/// let matrix = ScoreMatrix { data: &scores, rows, width, pitch: width, lengths: &lengths };
/// let spec = Spec { k: k as u32, ..Spec::default() };
/// let mut out = vec![0i32; rows * k];
/// let routes = cpu::select(&spec, &matrix, &mut out, k, false)?;
/// assert!(cpu::verify(&matrix, k, &out, k)?.is_exact());
/// assert_eq!(routes.count(Route::Short), 1);
/// assert_eq!(&out[2 * k + 50..3 * k], &[-1; 14][..]); // 50 indices, then -1
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`Error::Spec`], [`Error::K`], [`Error::Input`], [`Error::Length`] or [`Error::NaN`] as
/// above.
pub fn select(
    spec: &Spec,
    scores: &ScoreMatrix,
    out: &mut [i32],
    out_pitch: usize,
    per_row_routes: bool,
) -> Result<RouteStats> {
    select_rows_from(
        spec,
        scores,
        0,
        scores.rows as u64,
        out,
        out_pitch,
        per_row_routes,
    )
}

/// [`select`] for a block of rows cut from a larger matrix of `call_rows` rows: row `r` of
/// `scores` is row `first_row + r` of the whole, which fixes its view phase (paper eq. 13) and,
/// with a tail margin (`Spec::tail_rows`), its rank, so a matrix selected in blocks takes the
/// same routes as when selected whole.
///
/// # Errors
/// As [`select`]; also when `first_row + rows` exceeds `call_rows`.
pub fn select_rows_from(
    spec: &Spec,
    scores: &ScoreMatrix,
    first_row: u64,
    call_rows: u64,
    out: &mut [i32],
    out_pitch: usize,
    per_row_routes: bool,
) -> Result<RouteStats> {
    let params = Params::new(spec, call_rows)?;
    check_plain_interface(spec)?;
    let sorted = spec.io.order == Order::Sorted;
    let end = first_row.saturating_add(scores.rows as u64);
    if end > call_rows {
        return Err(Error::Input(format!(
            "rows {first_row}..{end} are not inside a call of {call_rows} rows; pass the whole \
             call's row count"
        )));
    }
    check_k(params.k)?;
    check_matrix(scores)?;
    check_indices(scores.rows, params.k, out.len(), out_pitch)?;
    if scores.rows == 0 {
        return Ok(RouteStats::from_rows([], per_row_routes));
    }
    let outcomes: Vec<RowOutcome> = out
        .par_chunks_mut(out_pitch)
        .take(scores.rows)
        .enumerate()
        .map_init(
            || RowScratch::new(&params),
            |scratch, (r, slots)| {
                let global = first_row as usize + r;
                let row = scores.row(r);
                let slots = &mut slots[..params.k];
                let outcome = select_row(&params, global, row, None, slots, scratch)
                    .map_err(|col| Error::NaN { row: r, col })?;
                if sorted {
                    sort_row(row, slots);
                }
                Ok(outcome)
            },
        )
        .collect::<Result<_>>()?;
    Ok(route_stats(&outcomes, per_row_routes))
}

/// Buffers one worker reuses for every row it selects.
pub(super) struct RowScratch {
    coarse_hist: Vec<u32>,
    frontier: Frontier,
    staging: Staging,
    /// A 16-bit row widened to FP32.
    pub widened: Vec<f32>,
}

impl RowScratch {
    pub fn new(params: &Params) -> Self {
        RowScratch {
            coarse_hist: vec![0; params.coarse_bins],
            frontier: Frontier::new(params.digit_bins),
            staging: Staging::default(),
            widened: Vec::new(),
        }
    }
}

/// The route of one row and the size of its initial frontier |Q0|.
#[derive(Clone, Copy)]
pub(super) struct RowOutcome {
    route: Route,
    candidates: usize,
}

/// Select one row into `slots` (exactly K slots), indices relative to the row's start, from
/// the row's prior boundary first when the spec takes one and `prior` is not NaN.
/// `Err(col)`: a NaN at `col`.
pub(super) fn select_row(
    params: &Params,
    row_index: usize,
    row: &[f32],
    prior: Option<f32>,
    slots: &mut [i32],
    scratch: &mut RowScratch,
) -> std::result::Result<RowOutcome, usize> {
    let k = params.k;
    if row.len() <= k {
        if let Some(col) = first_nan(row) {
            return Err(col);
        }
        write_short_row(slots, row.len());
        return Ok(RowOutcome {
            route: Route::Short,
            candidates: 0,
        });
    }
    let first = params.digits[0];
    let RowScratch {
        coarse_hist,
        frontier,
        staging,
        ..
    } = scratch;
    let mut out = OutRow::new(slots);

    let prior_route = match (params.prior, prior.filter(|p| !p.is_nan())) {
        (Some(bins), Some(p)) => certify_prior(params, bins, p, row, frontier, staging)?,
        _ => None,
    };
    let proposal = match &params.sampling {
        Some(sampling) if prior_route.is_none() => {
            propose_boundary(params, sampling, row_index, row, coarse_hist)?
        }
        _ => None,
    };
    let sampled_route = match proposal {
        None if prior_route.is_some() => prior_route,
        None => None,
        Some(proposal) => {
            frontier.reset(first);
            certify_and_collect(params, row, proposal.primary, frontier, staging)?;
            if frontier.current.len() >= k {
                Some(Route::Primary)
            } else if let Some(rescue) = proposal.rescue.filter(|&r| r != proposal.primary) {
                collect_band(params, row, rescue, proposal.primary, frontier, staging);
                (frontier.current.len() >= k).then_some(Route::Rescue)
            } else {
                None // an empty band cannot lift the count: straight to recovery
            }
        }
    };
    let (route, quota) = match sampled_route {
        Some(route) => (route, k),
        None => {
            let route = match proposal {
                Some(_) => Route::Recovery,
                None => Route::DirectExact,
            };
            let quota =
                exact_coarse_frontier(params, row, coarse_hist, frontier, staging, &mut out)?;
            (route, quota)
        }
    };
    let candidates = frontier.current.len();
    frontier.refine(&params.digits, quota, &mut out, params.lowest_ties);
    debug_assert_eq!(out.filled(), k);
    Ok(RowOutcome { route, candidates })
}

/// A spec [`select`] can run: FP32 scores, lengths in, indices out, no transform.
fn check_plain_interface(spec: &Spec) -> Result<()> {
    let io = &spec.io;
    let needs = if spec.dtype != Dtype::F32 {
        format!("dtype={}", spec.dtype)
    } else if io.values {
        "values=true".to_string()
    } else if io.rows != Rows::Lengths {
        format!("rows={}", io.rows)
    } else if io.transform != Transform::None {
        format!("transform={}", io.transform)
    } else {
        return Ok(());
    };
    Err(Error::Input(format!(
        "`{spec}`: {needs} needs cpu::select_with (ScoreRows, CallIo, CallOut); cpu::select \
         takes f32 scores with lengths and writes indices only"
    )))
}

pub(super) fn route_stats(outcomes: &[RowOutcome], per_row_routes: bool) -> RouteStats {
    RouteStats::from_rows(
        outcomes.iter().map(|o| (o.route, o.candidates as u64)),
        per_row_routes,
    )
}

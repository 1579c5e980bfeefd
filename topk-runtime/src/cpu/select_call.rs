//! The CPU selector over a whole call interface (`crate::call`): any score dtype, row windows
//! or decode rows, values, sorted output, lowest-index ties and fused index transforms. Each
//! row's window is selected as a row of its own (the same phases and routes as
//! [`super::select`] on a row of that length), then written as the call stores it.

use super::finish::{sort_row, write_row};
use super::params::Params;
use super::prior::row_boundary;
use super::select::{route_stats, select_row, RowOutcome, RowScratch};
use crate::call::{check_boundary, check_values, resolve, CallIo, CallOut};
use crate::input::{check_indices, check_k};
use crate::score::{Score, ScoreRows};
use crate::{Error, Result, RouteStats};
use rayon::prelude::*;
use topk_dsl::{Order, Spec};

/// Exact Top-K of every row of a call: row `r`'s valid scores are its window (`io.rows`), its
/// K indices go to `out.indices[r * out.pitch..][..K]` (relative to the window's start or
/// absolute, as the spec's `rows` says, then through `io.transform`), its values, with
/// `values=true`, to the same place of `out.values`. `order=sorted` writes them descending by
/// value; `ties=lowest` selects the lowest indices among the scores equal to the K-th largest
/// (and orders equal values by ascending index). Rows of `L <= K` list their L indices, then
/// `-1` (value `-inf`). Slots past K are not touched.
///
/// Fails, before reading any score, when the spec is invalid, the scores are not of the
/// spec's dtype, `io` or `out` do not match the spec's interface or do not fit the scores, a
/// window or decode length leaves `[0, width]`, or a transform cannot represent a row's indices;
/// while the rows are read, on a NaN among the valid scores (its row and column in the score
/// matrix) or a page-table entry that makes a negative or overlong index.
///
/// ```
/// use topk_dsl::{Io, Order, Rows, Spec, Ties, Transform};
/// use topk_runtime::call::{CallIo, CallOut, IndexTransform, RowSource};
/// use topk_runtime::{cpu, ScoreRows};
///
/// # fn main() -> topk_runtime::Result<()> {
/// // Row windows (vLLM's prefill layout), values, sorted, lowest-index ties, and each index
/// // shifted by its row's offset (FlashInfer's ragged transform).
/// let spec = Spec {
///     k: 2,
///     io: Io {
///         values: true,
///         order: Order::Sorted,
///         ties: Ties::Lowest,
///         rows: Rows::Window { relative: true },
///         transform: Transform::Offset,
///         ..Io::DEFAULT
///     },
///     ..Spec::default()
/// };
/// let scores = [0.5f32, 3.0, 1.0, 3.0, 2.0, 9.0];
/// let rows = ScoreRows { data: &scores, rows: 1, width: 6, pitch: 6 };
/// let io = CallIo {
///     rows: RowSource::Window { starts: &[1], ends: &[5] },
///     transform: IndexTransform::Offset(&[100]),
///     prior: None,
/// };
/// let (mut idx, mut vals) = ([0i32; 2], [0f32; 2]);
/// let out = CallOut { indices: &mut idx, pitch: 2, values: Some(&mut vals), boundary: None };
/// cpu::select_with(&spec, &rows, &io, out, false)?;
/// // Window [1, 5): the two 3.0s at window positions 0 and 2, lowest first, plus 100.
/// assert_eq!((idx, vals), ([100, 102], [3.0, 3.0]));
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// As above: [`crate::Error::Spec`], [`crate::Error::K`], [`crate::Error::Input`] or
/// [`crate::Error::NaN`], the row named.
pub fn select_with<T: Score>(
    spec: &Spec,
    scores: &ScoreRows<T>,
    io: &CallIo,
    out: CallOut<T>,
    per_row_routes: bool,
) -> Result<RouteStats> {
    let params = Params::new(spec, scores.rows as u64)?;
    let k = params.k;
    check_k(k)?;
    let (windows, transforms) = resolve(spec, scores, io)?;
    let CallOut {
        indices,
        pitch,
        values,
        boundary,
    } = out;
    check_indices(scores.rows, k, indices.len(), pitch)?;
    check_values(spec, values.as_deref(), scores.rows, k, pitch)?;
    check_boundary(spec, boundary.as_deref(), scores.rows)?;
    if scores.rows == 0 {
        return Ok(RouteStats::from_rows([], per_row_routes));
    }
    let sorted = spec.io.order == Order::Sorted;
    let mut value_rows: Vec<Option<&mut [T]>> = match values {
        Some(v) => v.chunks_mut(pitch).take(scores.rows).map(Some).collect(),
        None => std::iter::repeat_with(|| None).take(scores.rows).collect(),
    };
    let mut boundaries = vec![f32::NAN; scores.rows];
    let outcomes: Vec<RowOutcome> = indices
        .par_chunks_mut(pitch)
        .take(scores.rows)
        .zip(value_rows.par_iter_mut())
        .zip(boundaries.par_iter_mut())
        .enumerate()
        .map_init(
            || RowScratch::new(&params),
            |scratch, (r, ((slots, values), row_boundary_out))| {
                let place = windows[r];
                let src = &scores.row(r)[place.start..place.start + place.len];
                let mut widened = std::mem::take(&mut scratch.widened);
                let x = T::as_f32(src, &mut widened);
                let slots = &mut slots[..k];
                let prior = io.prior.map(|p| p[r]);
                let result = select_row(&params, r, x, prior, slots, scratch)
                    .map_err(|col| Error::NaN {
                        row: r,
                        col: place.start + col,
                    })
                    .and_then(|outcome| {
                        *row_boundary_out = row_boundary(x, slots, k);
                        if sorted {
                            sort_row(x, slots);
                        }
                        let values = values.as_deref_mut().map(|v| &mut v[..k]);
                        write_row(src, slots, values, &place, &transforms[r], r)?;
                        Ok(outcome)
                    });
                scratch.widened = widened;
                result
            },
        )
        .collect::<Result<_>>()?;
    if let Some(boundary) = boundary {
        boundary[..scores.rows].copy_from_slice(&boundaries);
    }
    Ok(route_stats(&outcomes, per_row_routes))
}

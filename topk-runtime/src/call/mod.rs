//! One host-side description of a call's optional inputs and outputs: where each row's valid
//! scores lie ([`RowSource`]), what is written for a selected position ([`IndexTransform`]) and
//! where values go ([`CallOut`]). The CPU backend (`cpu::select_with`), the oracle
//! (`cpu::oracle_with`) and the verifier (`cpu::verify_with`) take it; the GPU launch buffers
//! mirror it one to one (a device pointer per array, the scalars as kernel parameters), so the
//! same semantics are written down once, here:
//!
//! - Row `r`'s valid scores are `[start_r, start_r + L_r)` of its row (`rows::RowWindow`):
//!   `[0, len[r])` for [`RowSource::Lengths`], `[starts[r], ends[r])` for [`RowSource::Window`],
//!   `[0, seq_lens[r / next_n] - next_n + 1 + r % next_n)` for [`RowSource::Decode`] (vLLM's
//!   `top_k_per_row_decode`: `next_n` consecutive rows per sequence, the last of them seeing
//!   the whole sequence). The selector treats the window as the row: its view, routes and
//!   output are those of a row of `L_r` scores starting at `start_r`.
//! - A selected position `i` (relative to `start_r`) is written as `t = i` with
//!   `rows=window(relative)` (vLLM, SGLang and FlashInfer's convention) and with lengths or
//!   decode rows (whose start is 0), and as `t = start_r + i` with `rows=window(absolute)`;
//!   then the transform: `t + offset[r]`, or `table[r][t / P] * P + t % P` through a page table
//!   of page size P. A `-1` slot stays `-1`. Both peers' page lookups take the index relative to
//!   the window's start, so their calls use `window(relative)`; `window(absolute)` serves tables
//!   indexed by positions in the whole row (a sliding window over one sequence).
//! - Every transformed index must be a non-negative int32 (else it would read as padding): the
//!   offset range and the page table's width are checked per row before any score is read,
//!   each page-table entry when it is used.

mod rows;
mod transform;

pub use rows::{row_windows, RowWindow};
pub(crate) use transform::{RowTransform, TransformInverse};

use crate::score::{Score, ScoreRows};
use crate::{Error, Result};
use topk_dsl::{Io, Prior, Rows, Spec, Transform};

/// Where each row's valid scores lie; the kind must be the Spec's `rows`.
#[derive(Clone, Copy, Debug)]
pub enum RowSource<'a> {
    /// Row `r` is valid on `[0, lengths[r])` (`rows=lengths`).
    Lengths(&'a [i32]),
    /// Row `r` is valid on `[starts[r], ends[r])` (`rows=window(..)`).
    Window {
        /// Window start of each row.
        starts: &'a [i32],
        /// Window end (exclusive) of each row.
        ends: &'a [i32],
    },
    /// `next_n` rows per sequence; row `r` is valid on
    /// `[0, seq_lens[r / next_n] - next_n + 1 + r % next_n)` (`rows=decode`).
    Decode {
        /// Length of each sequence, one per `next_n` rows.
        seq_lens: &'a [i32],
        /// Rows per sequence: 1 + the speculative tokens.
        next_n: u32,
    },
}

/// A page table: row `r` of the score matrix reads `data[r * pitch..][..columns]` (every row
/// the same table row when `pitch` is 0), one physical page per `page_size` positions.
#[derive(Clone, Copy, Debug)]
pub struct PageTable<'a> {
    /// The table's entries: physical page numbers.
    pub data: &'a [i32],
    /// Entries per table row: the pages a row may address.
    pub columns: usize,
    /// Elements between the starts of consecutive table rows; 0 shares one row among all.
    pub pitch: usize,
    /// Positions per page, at least 1 (1: a token-to-slot table).
    pub page_size: u32,
}

/// What is written for a selected position; the kind must be the Spec's `transform`.
#[derive(Clone, Copy, Debug)]
pub enum IndexTransform<'a> {
    /// The index itself.
    None,
    /// `index + offsets[r]`.
    Offset(&'a [i32]),
    /// `table[r][index / P] * P + index % P`.
    Paged(PageTable<'a>),
    /// `table[rows[r]][index / P] * P + index % P`: row `r` reads the table row its map entry
    /// names (FlashInfer's `row_to_batch`); the table holds any number of rows.
    PagedRows {
        /// The page table (its pitch may not be 0: each table row is addressed).
        table: PageTable<'a>,
        /// The table row of each score row.
        rows: &'a [i32],
    },
}

/// The optional inputs of a call beside the scores.
#[derive(Clone, Copy, Debug)]
pub struct CallIo<'a> {
    /// Where each row's valid scores lie.
    pub rows: RowSource<'a>,
    /// What is written for a selected position.
    pub transform: IndexTransform<'a>,
    /// One prior boundary per row (NaN: none for that row), exactly when the Spec has
    /// `prior=P/R`: typically the `boundary` the previous decode step wrote for the row.
    pub prior: Option<&'a [f32]>,
}

impl<'a> CallIo<'a> {
    /// The plain operator's inputs: one valid length per row, indices as they are.
    pub fn lengths(lengths: &'a [i32]) -> Self {
        CallIo {
            rows: RowSource::Lengths(lengths),
            transform: IndexTransform::None,
            prior: None,
        }
    }

    /// Error unless the kinds of rows and transform are the ones the Spec's interface names.
    pub(crate) fn check_kinds(&self, io: &Io) -> Result<()> {
        let rows_match = matches!(
            (self.rows, io.rows),
            (RowSource::Lengths(_), Rows::Lengths)
                | (RowSource::Window { .. }, Rows::Window { .. })
                | (RowSource::Decode { .. }, Rows::Decode)
        );
        if !rows_match {
            return Err(Error::Input(format!(
                "the spec has rows={} but the call passes {}; pass the row source the spec \
                 names, or change the spec's `rows`",
                io.rows,
                self.rows.describe()
            )));
        }
        let transform_match = matches!(
            (self.transform, io.transform),
            (IndexTransform::None, Transform::None)
                | (IndexTransform::Offset(_), Transform::Offset)
                | (IndexTransform::Paged(_), Transform::Paged)
                | (IndexTransform::PagedRows { .. }, Transform::PagedRows)
        );
        if !transform_match {
            return Err(Error::Input(format!(
                "the spec has transform={} but the call passes {}; pass the transform the \
                 spec names, or change the spec's `transform`",
                io.transform,
                self.transform.describe()
            )));
        }
        Ok(())
    }
}

/// Each row's window and transform for a call of `spec` on `scores`, after checking that the
/// scores have the spec's dtype, that `io` passes the row source and transform the spec names,
/// that the score buffer holds its rows, and every row's window and transform range (before any
/// score is read).
pub(crate) fn resolve<'a, T: Score>(
    spec: &Spec,
    scores: &ScoreRows<T>,
    io: &CallIo<'a>,
) -> Result<(Vec<RowWindow>, Vec<RowTransform<'a>>)> {
    if T::DTYPE != spec.dtype {
        return Err(Error::Input(format!(
            "the spec has dtype={} but the scores are {}; select them with a spec of their \
             dtype",
            spec.dtype,
            T::DTYPE
        )));
    }
    io.check_kinds(&spec.io)?;
    check_prior(spec, io.prior, scores.rows)?;
    crate::input::check_score_rows(scores)?;
    let windows = row_windows(spec.io.rows, &io.rows, scores.rows, scores.width)?;
    let transforms = io.transform.per_row(&windows)?;
    Ok((windows, transforms))
}

/// A values buffer is given exactly when the spec has `values=true`, and holds `rows` rows of
/// `k` values at `pitch`.
pub(crate) fn check_values<T>(
    spec: &Spec,
    values: Option<&[T]>,
    rows: usize,
    k: usize,
    pitch: usize,
) -> Result<()> {
    match (spec.io.values, values) {
        (false, None) => Ok(()),
        (true, Some(v)) => crate::input::check_indices(rows, k, v.len(), pitch)
            .map_err(|e| Error::Input(format!("values: {e}"))),
        (true, None) => Err(Error::Input(
            "the spec has values=true but no values buffer was given; pass one of rows x K at \
             the index pitch"
                .into(),
        )),
        (false, Some(_)) => Err(Error::Input(
            "a values buffer was given but the spec has no values=true; set it in the spec, or \
             pass no buffer"
                .into(),
        )),
    }
}

/// A prior is given exactly when the spec has `prior=P/R`, one per row.
fn check_prior(spec: &Spec, prior: Option<&[f32]>, rows: usize) -> Result<()> {
    match (spec.io.prior, prior) {
        (Prior::None, None) => Ok(()),
        (Prior::Bins { .. }, Some(p)) if p.len() >= rows => Ok(()),
        (Prior::Bins { .. }, Some(p)) => Err(Error::Input(format!(
            "the prior holds {} values for {rows} rows; pass one per row (NaN for a row \
             without one)",
            p.len()
        ))),
        (Prior::Bins { .. }, None) => Err(Error::Input(
            "the spec has a prior (prior=P/R) but the call passes none; pass one per row (NaN \
             for a row without one), or remove `prior` from the spec"
                .into(),
        )),
        (Prior::None, Some(_)) => Err(Error::Input(
            "a prior was given but the spec has none; add prior=P/R to the spec (e.g. \
             prior=2/8), or pass no prior"
                .into(),
        )),
    }
}

/// A boundary buffer is given exactly when the spec has `boundary=true`, one per row.
pub(crate) fn check_boundary(spec: &Spec, boundary: Option<&[f32]>, rows: usize) -> Result<()> {
    match (spec.io.boundary, boundary) {
        (false, None) => Ok(()),
        (true, Some(b)) if b.len() >= rows => Ok(()),
        (true, Some(b)) => Err(Error::Input(format!(
            "the boundary buffer holds {} values for {rows} rows; pass one of a value per row",
            b.len()
        ))),
        (true, None) => Err(Error::Input(
            "the spec has boundary=true but no boundary buffer was given; pass one of a value \
             per row"
                .into(),
        )),
        (false, Some(_)) => Err(Error::Input(
            "a boundary buffer was given but the spec has no boundary=true; set it in the \
             spec, or pass no buffer"
                .into(),
        )),
    }
}

impl RowSource<'_> {
    fn describe(&self) -> &'static str {
        match self {
            RowSource::Lengths(_) => "lengths",
            RowSource::Window { .. } => "window starts and ends",
            RowSource::Decode { .. } => "decode seq_lens",
        }
    }
}

impl IndexTransform<'_> {
    fn describe(&self) -> &'static str {
        match self {
            IndexTransform::None => "no transform",
            IndexTransform::Offset(_) => "offsets",
            IndexTransform::Paged(_) => "a page table",
            IndexTransform::PagedRows { .. } => "a page table with a row map",
        }
    }
}

/// Where a call writes: row `r`'s K indices at `indices[r * pitch..][..K]` and, when the Spec
/// has `values=true`, its K values at the same place of `values` (in the score dtype; `-inf`
/// where the index is `-1`); with `boundary=true`, its K-th largest score at `boundary[r]`.
#[derive(Debug)]
pub struct CallOut<'a, T> {
    /// `rows x pitch` indices.
    pub indices: &'a mut [i32],
    /// Elements between the starts of consecutive output rows, `>= K`.
    pub pitch: usize,
    /// The selected values at the same places, exactly when the Spec has `values=true`.
    pub values: Option<&'a mut [T]>,
    /// Each row's K-th largest score (NaN for a row of `L <= K`; `-0.0` written as `+0.0`),
    /// exactly when the Spec has `boundary=true`: the next decode step's prior.
    pub boundary: Option<&'a mut [f32]>,
}

impl<'a, T: Score> CallOut<'a, T> {
    /// Indices only, at `pitch`.
    pub fn indices(indices: &'a mut [i32], pitch: usize) -> Self {
        CallOut {
            indices,
            pitch,
            values: None,
            boundary: None,
        }
    }
}

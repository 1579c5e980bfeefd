//! The device pointers of one call: the operator's buffers (`RawBuffers`) and the call
//! interface's (`CallBuffers`: the row source, the index transform, the values), with the
//! entry arguments each gives the kernels.

use super::super::entry_args::{
    BoundaryArgs, CallArgs, DecodeArgs, LengthsArgs, OffsetArgs, PagedArgs, PagedRowsArgs,
    PriorArgs, RowArgs, TransformArgs, ValuesArgs, WindowArgs,
};
use crate::{Error, Result};
use cudarc::driver::sys::CUdeviceptr;

/// Device pointers of one call, for producers outside cudarc (PyTorch through DLPack, candle,
/// ...): the same buffers as [`LaunchBuffers`](super::LaunchBuffers); `row_info` is 0 when not wanted. `lengths` is
/// read only by a plan whose spec has `rows=lengths` (the others take their row source from
/// [`CallBuffers`]: pass 0).
#[derive(Clone, Copy, Debug)]
pub struct RawBuffers {
    /// Scores of the spec's dtype (f32, or FP16 / bfloat16 bits), `M_cap x pitch`.
    pub scores: CUdeviceptr,
    /// i32 valid length of each row.
    pub lengths: CUdeviceptr,
    /// One i32: the live row count `m`.
    pub live_rows: CUdeviceptr,
    /// i32 indices, `M_cap x out_pitch`.
    pub out: CUdeviceptr,
    /// i32 (route, |Q0|) pair of each row, or 0.
    pub row_info: CUdeviceptr,
}

/// Where each row's valid scores lie on the device (the spec's `rows`; `docs/interface.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceRows {
    /// `rows=lengths`: [`RawBuffers::lengths`].
    #[default]
    Lengths,
    /// `rows=window(..)`: `M_cap` window starts and `M_cap` window ends (int32); row r's valid
    /// scores are `[starts[r], ends[r])`.
    Window {
        /// `M_cap` int32 window starts.
        starts: CUdeviceptr,
        /// `M_cap` int32 window ends (exclusive).
        ends: CUdeviceptr,
    },
    /// `rows=decode`: one sequence length (int32) per `next_n` rows; row r is valid on
    /// `[0, seq_lens[r / next_n] - next_n + 1 + r % next_n)`.
    Decode {
        /// One int32 sequence length per `next_n` rows.
        seq_lens: CUdeviceptr,
        /// Rows per sequence (speculative tokens plus one), at least 1.
        next_n: u32,
    },
}

/// What is written for a selected position on the device (the spec's `transform`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceTransform {
    /// The index itself.
    #[default]
    None,
    /// `index + offsets[r]`: `M_cap` int32 offsets.
    Offset {
        /// `M_cap` int32 offsets.
        offsets: CUdeviceptr,
    },
    /// `table[r * pitch + index / page_size] * page_size + index % page_size`: an int32 page
    /// table of `columns` pages per row at row pitch `pitch` elements (0: one row shared by
    /// all), `page_size >= 1`.
    Paged {
        /// The int32 page table.
        table: CUdeviceptr,
        /// Pages per table row; a used page beyond it raises `BAD_TRANSFORM`.
        columns: u32,
        /// Table row pitch in elements (0: one row shared by every score row).
        pitch: u64,
        /// Positions per page, at least 1.
        page_size: u32,
    },
    /// [`DeviceTransform::Paged`] with score row `r` reading table row `rows[r]`
    /// (`transform=paged(rows)`); an entry outside `0..table_rows` raises `BAD_TRANSFORM`.
    PagedRows {
        /// The int32 page table.
        table: CUdeviceptr,
        /// Pages per table row.
        columns: u32,
        /// Table row pitch in elements.
        pitch: u64,
        /// Positions per page, at least 1.
        page_size: u32,
        /// `M_cap` int32 table rows, one per score row.
        rows: CUdeviceptr,
        /// Rows the table holds.
        table_rows: u32,
    },
}

/// The device buffers of a call's interface beyond the plain operator ([`topk_dsl::Io`]), for
/// [`Plan::launch_call_with`](crate::cuda::Plan::launch_call_with): the row source unless it is `lengths`, the transform's array and
/// scalars, and the values output. Their kinds must be the plan's spec's; the default is the
/// plain operator's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallBuffers {
    /// Where each row's valid scores lie.
    pub rows: DeviceRows,
    /// What is written for a selected position.
    pub transform: DeviceTransform,
    /// `(rows - 1) * out_pitch + K` writable values of the spec's dtype at the index output's
    /// pitch (`values=true`), else 0.
    pub values: CUdeviceptr,
    /// `rows` FP32 prior boundaries, NaN for a row without one (`prior=P/R`), else 0.
    pub prior: CUdeviceptr,
    /// `rows` writable FP32, each row's K-th largest score (`boundary=true`), else 0. It may be
    /// the prior's buffer: a row reads its prior before its boundary is written.
    pub boundary: CUdeviceptr,
}

impl CallBuffers {
    /// The plain operator's: lengths, no transform, no values.
    pub const PLAIN: CallBuffers = CallBuffers {
        rows: DeviceRows::Lengths,
        transform: DeviceTransform::None,
        values: 0,
        prior: 0,
        boundary: 0,
    };

    /// The launch arguments of these buffers for a plan of `spec`, after checking that they
    /// are of the kinds the spec's interface names and that the scalars fit the kernels' ints.
    pub(crate) fn args(&self, spec: &topk_dsl::Spec, lengths: CUdeviceptr) -> Result<CallArgs> {
        use topk_dsl::{Rows, Transform};
        let io = &spec.io;
        let mismatch = |what: &str, spec_has: String| {
            Error::Input(format!(
                "the plan's spec has {spec_has} but the call passes {what}; pass the buffers \
                 its interface names (CallBuffers) or plan for another spec"
            ))
        };
        let rows = match (self.rows, io.rows) {
            (DeviceRows::Lengths, Rows::Lengths) => RowArgs::Lengths(LengthsArgs { lengths }),
            (DeviceRows::Window { starts, ends }, Rows::Window { .. }) => {
                RowArgs::Window(WindowArgs { starts, ends })
            }
            (DeviceRows::Decode { seq_lens, next_n }, Rows::Decode) => {
                RowArgs::Decode(DecodeArgs {
                    seq_lens,
                    next_n: int_arg("next_n", next_n as u64, 1)?,
                })
            }
            (given, _) => return Err(mismatch(given.describe(), format!("rows={}", io.rows))),
        };
        let transform = match (self.transform, io.transform) {
            (DeviceTransform::None, Transform::None) => TransformArgs::None,
            (DeviceTransform::Offset { offsets }, Transform::Offset) => {
                TransformArgs::Offset(OffsetArgs { offsets })
            }
            (
                DeviceTransform::Paged {
                    table,
                    columns,
                    pitch,
                    page_size,
                },
                Transform::Paged,
            ) => TransformArgs::Paged(paged_args(table, columns, pitch, page_size)?),
            (
                DeviceTransform::PagedRows {
                    table,
                    columns,
                    pitch,
                    page_size,
                    rows,
                    table_rows,
                },
                Transform::PagedRows,
            ) => {
                let PagedArgs {
                    page_table,
                    page_columns,
                    page_pitch,
                    page_size,
                } = paged_args(table, columns, pitch, page_size)?;
                TransformArgs::PagedRows(PagedRowsArgs {
                    page_table,
                    page_columns,
                    page_pitch,
                    page_size,
                    page_rows: rows,
                    page_table_rows: int_arg("page-table rows", table_rows as u64, 0)?,
                })
            }
            (given, _) => {
                return Err(mismatch(
                    given.describe(),
                    format!("transform={}", io.transform),
                ))
            }
        };
        let values = match (self.values, io.values) {
            (0, false) => None,
            (values, true) if values != 0 => Some(ValuesArgs { values }),
            (0, true) => {
                return Err(Error::Input(
                    "the plan's spec has values=true but the call passes no values buffer; \
                     pass one of rows x K in the score dtype at the index pitch"
                        .into(),
                ))
            }
            _ => {
                return Err(Error::Input(
                    "a values buffer was given but the plan's spec has no values=true; plan \
                     for a spec with values=true, or pass none"
                        .into(),
                ))
            }
        };
        let prior = match (self.prior, io.prior) {
            (0, topk_dsl::Prior::None) => None,
            (prior, topk_dsl::Prior::Bins { .. }) if prior != 0 => Some(PriorArgs { prior }),
            (0, _) => {
                return Err(Error::Input(
                    "the plan's spec has a prior (prior=P/R) but the call passes no prior \
                     buffer; pass one FP32 per row (NaN for a row without one)"
                        .into(),
                ))
            }
            _ => {
                return Err(Error::Input(
                    "a prior buffer was given but the plan's spec has no prior; plan for a \
                     spec with prior=P/R, or pass none"
                        .into(),
                ))
            }
        };
        let boundary = match (self.boundary, io.boundary) {
            (0, false) => None,
            (boundary, true) if boundary != 0 => Some(BoundaryArgs { boundary }),
            (0, true) => {
                return Err(Error::Input(
                    "the plan's spec has boundary=true but the call passes no boundary \
                     buffer; pass one of one FP32 per row"
                        .into(),
                ))
            }
            _ => {
                return Err(Error::Input(
                    "a boundary buffer was given but the plan's spec has no boundary=true; \
                     plan for a spec with it, or pass none"
                        .into(),
                ))
            }
        };
        Ok(CallArgs {
            rows,
            transform,
            values,
            prior,
            boundary,
        })
    }
}

/// `v` as an int kernel argument, at least `min`.
fn int_arg(what: &str, v: u64, min: u64) -> Result<i32> {
    if v < min || v > i32::MAX as u64 {
        Err(Error::Input(format!(
            "{what} {v} is outside {min}..={}",
            i32::MAX
        )))
    } else {
        Ok(v as i32)
    }
}

/// A page table's arguments, each checked to fit the kernel's parameter.
fn paged_args(table: CUdeviceptr, columns: u32, pitch: u64, page_size: u32) -> Result<PagedArgs> {
    Ok(PagedArgs {
        page_table: table,
        page_columns: int_arg("page-table columns", columns as u64, 0)?,
        page_pitch: i64::try_from(pitch)
            .map_err(|_| Error::Input(format!("page-table pitch {pitch} exceeds int64")))?,
        page_size: int_arg("page size", page_size as u64, 1)?,
    })
}

impl DeviceRows {
    fn describe(&self) -> &'static str {
        match self {
            DeviceRows::Lengths => "lengths",
            DeviceRows::Window { .. } => "window starts and ends",
            DeviceRows::Decode { .. } => "decode seq_lens",
        }
    }
}

impl DeviceTransform {
    fn describe(&self) -> &'static str {
        match self {
            DeviceTransform::None => "no transform",
            DeviceTransform::Offset { .. } => "offsets",
            DeviceTransform::Paged { .. } => "a page table",
            DeviceTransform::PagedRows { .. } => "a page table with a row map",
        }
    }
}

//! The call arguments as the Python layer passes them (tuples of plain integers and flags),
//! parsed into the runtime's types with a Python exception that says what is wrong.

use crate::cpu;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use topk_dsl::{Dtype, Io, Order, Prior, Rows, Spec, Ties, Transform};
use topk_runtime::cuda::{CallBuffers, DeviceRows, DeviceTransform};

pub(crate) fn to_u32(what: &str, v: u64) -> PyResult<u32> {
    u32::try_from(v).map_err(|_| PyValueError::new_err(format!("{what} {v} does not fit 32 bits")))
}

/// The form of a call's interface from Python: `(values, sorted, deterministic, rows,
/// transform, prior, boundary)`, `rows` one of `lengths`, `window`, `window_absolute`,
/// `decode`, `transform` one of `none`, `offset`, `paged`, `paged_rows` (the spec's
/// `paged(rows)`) and `prior` `none` or `P/R` (`docs/interface.md`).
pub(crate) type IoArg = (bool, bool, bool, String, String, String, bool);

/// Device pointers and scalars of a call's interface: `(values, starts, ends, seq_lens,
/// next_n, offsets, paged, prior, boundary)`, `paged` being [`PagedArg`]; 0 where unused.
pub(crate) type BuffersArg = (u64, u64, u64, u64, u64, u64, PagedArg, u64, u64);

/// A device page table: `(table, columns, pitch, page_size, page_rows, table_rows)`, the row
/// map `page_rows` and the table's row count only with `transform=paged(rows)`. A tuple of its
/// own, since PyO3 converts tuples of at most 12 elements.
pub(crate) type PagedArg = (u64, u64, u64, u64, u64, u64);

pub(crate) fn parse_dtype(dtype: &str) -> PyResult<Dtype> {
    dtype
        .parse()
        .map_err(|_| PyValueError::new_err(format!("unknown score dtype `{dtype}`")))
}

/// A row's prior margins `P/R` (or `none`), checked as a spec checks them.
pub(crate) fn parse_prior(text: &str) -> PyResult<Prior> {
    let prior: Prior = text
        .parse()
        .map_err(|e| PyValueError::new_err(format!("prior_bins {text:?}: {e}")))?;
    // The default spec is valid, so any error is the prior's.
    let spec = Spec {
        io: Io {
            prior,
            ..Io::DEFAULT
        },
        ..Spec::default()
    };
    spec.validate()
        .map_err(|e| PyValueError::new_err(format!("prior_bins {text:?}: {e}")))?;
    Ok(prior)
}

pub(crate) fn parse_io(
    (values, sorted, deterministic, rows, transform, prior, boundary): IoArg,
) -> PyResult<Io> {
    let rows = match rows.as_str() {
        "lengths" => Rows::Lengths,
        "window" => Rows::Window { relative: true },
        "window_absolute" => Rows::Window { relative: false },
        "decode" => Rows::Decode,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown row source `{other}`: lengths, window, window_absolute or decode"
            )))
        }
    };
    let transform = match transform.as_str() {
        "none" => Transform::None,
        "offset" => Transform::Offset,
        "paged" => Transform::Paged,
        "paged_rows" => Transform::PagedRows,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown index transform `{other}`: none, offset, paged or paged_rows"
            )))
        }
    };
    Ok(Io {
        values,
        order: if sorted { Order::Sorted } else { Order::Any },
        ties: if deterministic {
            Ties::Lowest
        } else {
            Ties::Any
        },
        rows,
        transform,
        prior: parse_prior(&prior)?,
        boundary,
    })
}

/// The device buffers of an interface `io`, each one it names present (a pointer of 0 is a
/// missing argument).
pub(crate) fn device_buffers(io: &Io, b: BuffersArg) -> PyResult<CallBuffers> {
    let (
        values,
        starts,
        ends,
        seq_lens,
        next_n,
        offsets,
        (table, columns, table_pitch, page_size, page_rows, table_rows),
        prior,
        boundary,
    ) = b;
    let need = |ptr: u64, name: &str| {
        if ptr == 0 {
            Err(PyValueError::new_err(format!(
                "this call's interface needs `{name}`: pass it as a device tensor"
            )))
        } else {
            Ok(ptr)
        }
    };
    let rows = match io.rows {
        Rows::Lengths => DeviceRows::Lengths,
        Rows::Window { .. } => DeviceRows::Window {
            starts: need(starts, "starts")?,
            ends: need(ends, "ends")?,
        },
        Rows::Decode => DeviceRows::Decode {
            seq_lens: need(seq_lens, "seq_lens")?,
            next_n: to_u32("next_n", next_n)?,
        },
    };
    let transform = match io.transform {
        Transform::None => DeviceTransform::None,
        Transform::Offset => DeviceTransform::Offset {
            offsets: need(offsets, "offsets")?,
        },
        Transform::Paged => DeviceTransform::Paged {
            table: need(table, "page_table")?,
            columns: to_u32("page-table columns", columns)?,
            pitch: table_pitch,
            page_size: to_u32("page_size", page_size)?,
        },
        Transform::PagedRows => DeviceTransform::PagedRows {
            table: need(table, "page_table")?,
            columns: to_u32("page-table columns", columns)?,
            pitch: table_pitch,
            page_size: to_u32("page_size", page_size)?,
            rows: need(page_rows, "page_rows")?,
            table_rows: to_u32("page-table rows", table_rows)?,
        },
    };
    let values = if io.values {
        need(values, "values")?
    } else {
        0
    };
    let prior = if io.prior == Prior::None {
        0
    } else {
        need(prior, "prior")?
    };
    let boundary = if io.boundary {
        need(boundary, "boundary")?
    } else {
        0
    };
    Ok(CallBuffers {
        rows,
        transform,
        values,
        prior,
        boundary,
    })
}

/// A 1-D int32/int64 host array from Python: `(ptr, bits, len, stride)`, stride in elements.
pub(crate) type IntsArg = (u64, u32, usize, isize);
/// A 2-D int32/int64 host array: `(ptr, bits, rows, columns, row_stride, col_stride)`.
pub(crate) type TableArg = (u64, u32, usize, usize, isize, isize);

pub(crate) fn host_ints(name: &str, a: IntsArg) -> PyResult<cpu::HostInts> {
    let (ptr, bits, len, stride) = a;
    if bits != 32 && bits != 64 {
        return Err(PyValueError::new_err(format!(
            "{name} must be int32 or int64, got {bits}-bit integers"
        )));
    }
    if ptr == 0 && len > 0 {
        return Err(PyValueError::new_err(format!("{name} has no data pointer")));
    }
    Ok(cpu::HostInts {
        ptr,
        bits,
        len,
        stride,
    })
}

pub(crate) fn host_table(t: TableArg) -> PyResult<cpu::HostTable> {
    let (ptr, bits, rows, columns, row_stride, col_stride) = t;
    let check = host_ints("page_table", (ptr, bits, rows * columns, col_stride))?;
    Ok(cpu::HostTable {
        ptr: check.ptr,
        bits,
        rows,
        columns,
        row_stride,
        col_stride,
    })
}

/// The row source of a CPU call from the arrays given (at most one kind).
pub(crate) fn host_rows(
    lengths: Option<IntsArg>,
    starts: Option<IntsArg>,
    ends: Option<IntsArg>,
    relative: bool,
    seq_lens: Option<IntsArg>,
    next_n: u32,
) -> PyResult<cpu::HostRows> {
    Ok(match (lengths, starts, ends, seq_lens) {
        (None, None, None, None) => cpu::HostRows::Full,
        (Some(l), None, None, None) => cpu::HostRows::Lengths(host_ints("lengths", l)?),
        (None, Some(s), Some(e), None) => cpu::HostRows::Window {
            starts: host_ints("starts", s)?,
            ends: host_ints("ends", e)?,
            relative,
        },
        (None, None, None, Some(s)) => cpu::HostRows::Decode {
            seq_lens: host_ints("seq_lens", s)?,
            next_n,
        },
        _ => {
            return Err(PyValueError::new_err(
                "give one row source: lengths, or starts and ends, or seq_lens",
            ))
        }
    })
}

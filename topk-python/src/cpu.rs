//! The CPU backend on host buffers described by raw pointers (NumPy arrays, CPU tensors, any
//! DLPack producer on the CPU): `topk_runtime::cpu::select_with` over the whole call interface
//! (`docs/interface.md`: f16/bf16 scores, values, sorted order, lowest-index ties, row windows,
//! decode rows, offset and paged transforms (with or without a row map), a row's prior and
//! boundary output), with the CLI's default policy.

use crate::errors::to_py;
use half::{bf16, f16};
use topk_dsl::{Digits, Dtype, Io, Order, Prior, Rows, Spec, Ties, Transform, MAX_K};
use topk_runtime::call::{CallIo, CallOut, IndexTransform, PageTable, RowSource};
use topk_runtime::{cpu, Error, Result, Score, ScoreRows};

/// A 1-D int32 or int64 host array: `len` elements `stride` elements apart.
#[derive(Clone, Copy, Debug)]
pub struct HostInts {
    pub ptr: u64,
    pub bits: u32,
    pub len: usize,
    pub stride: isize,
}

/// A 1-D float32 host array: `len` elements `stride` elements apart.
#[derive(Clone, Copy, Debug)]
pub struct HostFloats {
    pub ptr: u64,
    pub len: usize,
    pub stride: isize,
}

/// A 2-D int32 or int64 host array (a page table), strides in elements.
#[derive(Clone, Copy, Debug)]
pub struct HostTable {
    pub ptr: u64,
    pub bits: u32,
    pub rows: usize,
    pub columns: usize,
    pub row_stride: isize,
    pub col_stride: isize,
}

/// Where each row's valid scores lie, as the caller holds the arrays.
#[derive(Clone, Copy, Debug)]
pub enum HostRows {
    /// Every row full.
    Full,
    Lengths(HostInts),
    Window {
        starts: HostInts,
        ends: HostInts,
        relative: bool,
    },
    Decode {
        seq_lens: HostInts,
        next_n: u32,
    },
}

/// What is written for a selected position, as the caller holds the arrays.
#[derive(Clone, Copy, Debug)]
pub enum HostTransform {
    None,
    Offset(HostInts),
    /// `table` has one row per score row, or one row that every score row shares.
    Paged {
        table: HostTable,
        page_size: u32,
    },
    /// Score row `r` reads table row `rows[r]` (FlashInfer's `row_to_batch`); `table` has any
    /// number of rows.
    PagedRows {
        table: HostTable,
        page_size: u32,
        rows: HostInts,
    },
}

/// One CPU call on host memory. `values`: where the selected scores go (pointer, row pitch),
/// in the scores' dtype. `prior`: one float32 per row with the margins `prior_bins`;
/// `boundary`: where each row's K-th largest score goes (`rows` contiguous float32; it may be
/// the prior's array, which is read before anything is written).
#[derive(Clone, Copy, Debug)]
pub struct HostCall {
    pub scores: u64,
    pub dtype: Dtype,
    pub rows: usize,
    pub width: usize,
    pub pitch: usize,
    pub k: usize,
    pub out: u64,
    pub out_pitch: usize,
    pub values: Option<(u64, usize)>,
    pub source: HostRows,
    pub transform: HostTransform,
    pub sorted: bool,
    pub lowest_ties: bool,
    pub prior: Option<HostFloats>,
    pub prior_bins: Prior,
    pub boundary: Option<u64>,
}

/// The CPU policy without a spec: the GPU planner's persistent default at `k` for rows of
/// `width` scores, as the CLI's `topk::backend::default_spec`.
pub fn default_spec(k: usize, width: usize) -> Spec {
    let width = u32::try_from(width).unwrap_or(u32::MAX);
    let k = u32::try_from(k).unwrap_or(u32::MAX);
    Spec {
        k,
        ..topk_runtime::policy::persistent_spec_for(k.clamp(1, MAX_K), width)
    }
}

/// The spec of a call: the default policy for `dtype` (16-bit scores refine their own key,
/// `Digits::default_for`) with the interface `io`.
fn call_spec(k: usize, width: usize, dtype: Dtype, io: Io) -> Result<Spec> {
    let mut spec = default_spec(k, width);
    if dtype != Dtype::F32 {
        spec.digits = Digits::default_for(dtype, spec.coarse_bits);
    }
    spec.dtype = dtype;
    spec.io = io;
    spec.validate()?;
    Ok(spec)
}

impl HostCall {
    fn io(&self) -> Io {
        Io {
            values: self.values.is_some(),
            order: if self.sorted {
                Order::Sorted
            } else {
                Order::Any
            },
            ties: if self.lowest_ties {
                Ties::Lowest
            } else {
                Ties::Any
            },
            rows: match self.source {
                HostRows::Full | HostRows::Lengths(_) => Rows::Lengths,
                HostRows::Window { relative, .. } => Rows::Window { relative },
                HostRows::Decode { .. } => Rows::Decode,
            },
            transform: match self.transform {
                HostTransform::None => Transform::None,
                HostTransform::Offset(_) => Transform::Offset,
                HostTransform::Paged { .. } => Transform::Paged,
                HostTransform::PagedRows { .. } => Transform::PagedRows,
            },
            prior: if self.prior.is_some() {
                self.prior_bins
            } else {
                Prior::None
            },
            boundary: self.boundary.is_some(),
        }
    }
}

/// `len` elements of type `T` at `ptr` as a slice; a dangling pointer for an empty one (a
/// zero-size array may have a null data pointer).
///
/// # Safety
/// `ptr` must address `len` readable `T` when `len > 0`.
unsafe fn host_slice<'a, T>(ptr: u64, len: usize) -> &'a [T] {
    if len == 0 {
        return &[];
    }
    // SAFETY: forwarded from the caller.
    unsafe { std::slice::from_raw_parts(ptr as *const T, len) }
}

/// Reads element `i` of a strided int32 / int64 array as i64.
///
/// # Safety
/// `i < a.len` and the array must address its elements.
unsafe fn read_at(a: &HostInts, i: usize) -> i64 {
    let at = i as isize * a.stride;
    // SAFETY: forwarded from the caller.
    unsafe {
        match a.bits {
            32 => *(a.ptr as *const i32).offset(at) as i64,
            _ => *(a.ptr as *const i64).offset(at),
        }
    }
}

/// The elements of `a` as int32; one that does not fit is `too_big(index, value)`.
///
/// # Safety
/// `a` must address its `len` elements.
unsafe fn read_ints(a: &HostInts, too_big: impl Fn(usize, i64) -> Error) -> Result<Vec<i32>> {
    (0..a.len)
        .map(|i| {
            // SAFETY: forwarded from the caller.
            let v = unsafe { read_at(a, i) };
            i32::try_from(v).map_err(|_| too_big(i, v))
        })
        .collect()
}

/// An error for `name[i] = v` beyond int32.
fn beyond_int32(name: &'static str) -> impl Fn(usize, i64) -> Error {
    move |i, v| {
        Error::Input(format!(
            "{name}[{i}] is {v}, beyond the int32 range: pass values that fit int32"
        ))
    }
}

/// The call's arrays read into int32 (the forms `CallIo` borrows).
#[derive(Default)]
struct Arrays {
    first: Vec<i32>,
    second: Vec<i32>,
    next_n: u32,
    transform: Vec<i32>,
    columns: usize,
    pitch: usize,
    page_size: u32,
    page_rows: Vec<i32>,
    prior: Vec<f32>,
}

impl Arrays {
    /// # Safety
    /// Every array of `call` must address its elements.
    unsafe fn read(call: &HostCall) -> Result<Arrays> {
        let mut a = Arrays::default();
        // SAFETY (each read below): forwarded from the caller.
        match call.source {
            HostRows::Full => a.first = vec![call.width as i32; call.rows],
            HostRows::Lengths(lengths) => {
                // A length beyond int32 is a bad length of its row, as any other.
                let width = call.width;
                a.first =
                    unsafe { read_ints(&lengths, |row, len| Error::Length { row, len, width })? };
            }
            HostRows::Window { starts, ends, .. } => {
                a.first = unsafe { read_ints(&starts, beyond_int32("starts"))? };
                a.second = unsafe { read_ints(&ends, beyond_int32("ends"))? };
            }
            HostRows::Decode { seq_lens, next_n } => {
                a.first = unsafe { read_ints(&seq_lens, beyond_int32("seq_lens"))? };
                a.next_n = next_n;
            }
        }
        match call.transform {
            HostTransform::None => {}
            HostTransform::Offset(offsets) => {
                a.transform = unsafe { read_ints(&offsets, beyond_int32("offsets"))? };
            }
            HostTransform::Paged { table, page_size } => {
                a.transform = unsafe { read_table(&table)? };
                a.columns = table.columns;
                a.pitch = if table.rows == 1 { 0 } else { table.columns };
                a.page_size = page_size;
            }
            HostTransform::PagedRows {
                table,
                page_size,
                rows,
            } => {
                a.page_rows = unsafe { read_page_rows(&rows, table.rows)? };
                a.transform = unsafe { read_table(&table)? };
                a.columns = table.columns;
                // Every table row is addressed, so the pitch is never 0; a table of no columns
                // still has its rows (one placeholder entry each).
                a.pitch = table.columns.max(1);
                if table.columns == 0 {
                    a.transform = vec![0; table.rows];
                }
                a.page_size = page_size;
            }
        }
        if let Some(prior) = call.prior {
            a.prior = (0..prior.len)
                // SAFETY: forwarded from the caller (`i < len`).
                .map(|i| unsafe { *(prior.ptr as *const f32).offset(i as isize * prior.stride) })
                .collect();
        }
        Ok(a)
    }

    fn io(&self, call: &HostCall) -> CallIo<'_> {
        CallIo {
            rows: match call.source {
                HostRows::Full | HostRows::Lengths(_) => RowSource::Lengths(&self.first),
                HostRows::Window { .. } => RowSource::Window {
                    starts: &self.first,
                    ends: &self.second,
                },
                HostRows::Decode { .. } => RowSource::Decode {
                    seq_lens: &self.first,
                    next_n: self.next_n,
                },
            },
            transform: match call.transform {
                HostTransform::None => IndexTransform::None,
                HostTransform::Offset(_) => IndexTransform::Offset(&self.transform),
                HostTransform::Paged { .. } => IndexTransform::Paged(self.page_table()),
                HostTransform::PagedRows { .. } => IndexTransform::PagedRows {
                    table: self.page_table(),
                    rows: &self.page_rows,
                },
            },
            prior: call.prior.map(|_| &self.prior[..]),
        }
    }

    fn page_table(&self) -> PageTable<'_> {
        PageTable {
            data: &self.transform,
            columns: self.columns,
            pitch: self.pitch,
            page_size: self.page_size,
        }
    }
}

/// A page table's row map, each entry checked to name one of the table's `table_rows` rows
/// (the error names the argument, which the runtime's own check cannot).
///
/// # Safety
/// `map` must address its `len` elements.
unsafe fn read_page_rows(map: &HostInts, table_rows: usize) -> Result<Vec<i32>> {
    (0..map.len)
        .map(|row| {
            // SAFETY: forwarded from the caller (`row < len`).
            let v = unsafe { read_at(map, row) };
            match (usize::try_from(v), i32::try_from(v)) {
                (Ok(t), Ok(entry)) if t < table_rows => Ok(entry),
                _ => Err(Error::Input(format!(
                    "row {row}: page_rows[{row}] is {v}, but page_table has {table_rows} rows: \
                     map each score row to a row of page_table (0 <= entry < {table_rows})"
                ))),
            }
        })
        .collect()
}

/// A page table read row by row into a contiguous int32 `[rows, columns]`.
///
/// # Safety
/// `t` must address its `rows x columns` elements at its strides.
unsafe fn read_table(t: &HostTable) -> Result<Vec<i32>> {
    let mut data = Vec::with_capacity(t.rows * t.columns);
    for r in 0..t.rows {
        let row = HostInts {
            ptr: t
                .ptr
                .wrapping_add_signed(r as i64 * t.row_stride as i64 * i64::from(t.bits / 8)),
            bits: t.bits,
            len: t.columns,
            stride: t.col_stride,
        };
        // SAFETY: forwarded from the caller.
        let values = unsafe {
            read_ints(&row, |c, v| {
                Error::Input(format!(
                    "page_table[{r}, {c}] is {v}, beyond the int32 range: page numbers must fit \
                     int32"
                ))
            })?
        };
        data.extend(values);
    }
    Ok(data)
}

/// Selects every row of `call` and writes indices (and values and boundaries) to the caller's
/// buffers; on an error nothing is written.
///
/// # Safety
/// `scores` must address `(rows - 1) * pitch + width` readable elements of `dtype`, every array
/// of the call its elements, `out` `(rows - 1) * out_pitch + k` writable int32, `values`
/// as many writable elements of `dtype` at its pitch and `boundary` `rows` writable float32,
/// none of them changed by anyone else during the call.
pub unsafe fn select(call: HostCall) -> Result<()> {
    if call.k == 0 || call.k > MAX_K as usize {
        return Err(Error::K {
            k: call.k,
            why: format!("K must be in 1..={MAX_K}"),
        });
    }
    if call.rows == 0 {
        return Ok(());
    }
    if call.width > i32::MAX as usize {
        return Err(Error::Input(format!(
            "width {} is beyond the int32 range of lengths and indices: split the rows",
            call.width
        )));
    }
    let spec = call_spec(call.k, call.width, call.dtype, call.io())?;
    // SAFETY: forwarded from the caller.
    let arrays = unsafe { Arrays::read(&call)? };
    let io = arrays.io(&call);
    // SAFETY (each arm): forwarded from the caller.
    match call.dtype {
        Dtype::F32 => unsafe { select_typed::<f32>(&call, &spec, &io) },
        Dtype::F16 => unsafe { select_typed::<f16>(&call, &spec, &io) },
        Dtype::Bf16 => unsafe { select_typed::<bf16>(&call, &spec, &io) },
    }
}

/// [`select`] for scores of type `T`: into staging buffers, then copied out.
///
/// # Safety
/// As [`select`].
unsafe fn select_typed<T: Score>(call: &HostCall, spec: &Spec, io: &CallIo) -> Result<()> {
    let (rows, k) = (call.rows, call.k);
    let span = (rows - 1) * call.pitch + call.width;
    let scores = ScoreRows {
        // SAFETY: the caller vouches for `span` readable scores.
        data: unsafe { host_slice::<T>(call.scores, span) },
        rows,
        width: call.width,
        pitch: call.pitch,
    };
    let mut indices = vec![-1i32; rows * k];
    let mut values = call.values.map(|_| vec![T::NEG_INFINITY; rows * k]);
    let mut boundary = call.boundary.map(|_| vec![f32::NAN; rows]);
    let staged = CallOut {
        indices: &mut indices,
        pitch: k,
        values: values.as_deref_mut(),
        boundary: boundary.as_deref_mut(),
    };
    cpu::select_with(spec, &scores, io, staged, false)?;
    // SAFETY: the caller vouches for the output rows.
    unsafe {
        copy_rows(&indices, k, call.out, call.out_pitch);
        if let (Some(values), Some((ptr, pitch))) = (values, call.values) {
            copy_rows(&values, k, ptr, pitch);
        }
        if let (Some(boundary), Some(ptr)) = (boundary, call.boundary) {
            copy_rows(&boundary, rows, ptr, rows);
        }
    }
    Ok(())
}

/// Copies rows of `k` elements from `src` (contiguous) to `dst` at row pitch `pitch`.
///
/// # Safety
/// `dst` must address `src.len() / k` rows of `k` writable elements at `pitch`.
unsafe fn copy_rows<T: Copy>(src: &[T], k: usize, dst: u64, pitch: usize) {
    let dst = dst as *mut T;
    for (row, chunk) in src.chunks_exact(k).enumerate() {
        // SAFETY: row `row` of `dst` has `k` writable slots at `row * pitch`.
        unsafe { std::ptr::copy_nonoverlapping(chunk.as_ptr(), dst.add(row * pitch), k) };
    }
}

/// [`select`] as a Python error.
///
/// # Safety
/// As [`select`].
pub unsafe fn select_py(call: HostCall) -> pyo3::PyResult<()> {
    // SAFETY: forwarded.
    unsafe { select(call) }.map_err(to_py)
}

//! The device side of one host call of the call interface: its inputs uploaded in their dtype,
//! its outputs allocated, its pointers for the launch; and the status bits it raised read back
//! as an error naming the row.

use super::locate_nan_in_windows;
use crate::call::{CallIo, IndexTransform, PageTable, RowSource, RowWindow};
use crate::cuda::launch::{status, CallBuffers, DeviceRows, DeviceTransform, RawBuffers};
use crate::cuda::plan::Plan;
use crate::score::{Score, ScoreRows};
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use std::sync::Arc;
use topk_dsl::Dtype;

/// The device side of one host call: its inputs uploaded, its outputs allocated.
pub(super) struct DeviceCall {
    scores: DeviceScores,
    live_rows: CudaSlice<i32>,
    /// The row source's arrays: lengths, window starts and ends, or decode sequence lengths.
    row_arrays: (CudaSlice<i32>, CudaSlice<i32>),
    /// The transform's array: offsets or the page table.
    table: CudaSlice<i32>,
    /// The page table's row map (`transform=paged(rows)`; one element otherwise).
    table_rows: CudaSlice<i32>,
    pub(super) out: CudaSlice<i32>,
    pub(super) values: DeviceScores,
    pub(super) info: CudaSlice<i32>,
    /// Each row's prior (`prior=P/R`; one element otherwise).
    prior: CudaSlice<f32>,
    /// Each row's K-th largest score (`boundary=true`; one element otherwise).
    pub(super) boundary: CudaSlice<f32>,
}

impl DeviceCall {
    /// Uploads the call's inputs (a one-element array stands in for an unused one) and
    /// allocates its outputs at the plan's output pitch.
    pub(super) fn upload<T: Score>(
        stream: &Arc<CudaStream>,
        plan: &Plan,
        scores: &ScoreRows<T>,
        io: &CallIo,
    ) -> Result<DeviceCall> {
        let rows = scores.rows;
        let up = |what: &str, v: &[i32]| {
            stream
                .clone_htod(if v.is_empty() { &[0][..] } else { v })
                .map_err(Error::driver(what))
        };
        let need = (rows - 1) * scores.pitch + scores.width;
        let (first, second) = match io.rows {
            RowSource::Lengths(lengths) => (lengths, &[][..]),
            RowSource::Window { starts, ends } => (starts, ends),
            RowSource::Decode { seq_lens, .. } => (seq_lens, &[][..]),
        };
        let (table, map): (&[i32], &[i32]) = match io.transform {
            IndexTransform::None => (&[], &[]),
            IndexTransform::Offset(offsets) => (offsets, &[]),
            IndexTransform::Paged(t) => (t.data, &[]),
            IndexTransform::PagedRows { table, rows } => (table.data, rows),
        };
        let out_len = (rows - 1) * plan.request.out_pitch as usize + plan.request.k as usize;
        let values_len = if plan.spec.io.values { out_len } else { 1 };
        let prior = io.prior.map_or(&[0f32][..], |p| &p[..rows]);
        let boundary_len = if plan.spec.io.boundary { rows } else { 1 };
        Ok(DeviceCall {
            scores: DeviceScores::upload(stream, &scores.data[..need])
                .map_err(Error::driver("uploading scores"))?,
            live_rows: up("uploading the row count", &[rows as i32])?,
            row_arrays: (
                up("uploading the row source", first)?,
                up("uploading the row source", second)?,
            ),
            table: up("uploading the transform", table)?,
            table_rows: up("uploading the page table's row map", map)?,
            out: stream
                .alloc_zeros::<i32>(out_len)
                .map_err(Error::driver("allocating the output"))?,
            values: DeviceScores::zeros::<T>(stream, values_len)
                .map_err(Error::driver("allocating the values"))?,
            info: stream
                .alloc_zeros::<i32>(2 * rows)
                .map_err(Error::driver("allocating row statistics"))?,
            prior: stream
                .clone_htod(prior)
                .map_err(Error::driver("uploading the prior"))?,
            boundary: stream
                .alloc_zeros::<f32>(boundary_len)
                .map_err(Error::driver("allocating the boundary"))?,
        })
    }

    /// The launch's pointers: the operator's buffers and the call interface's.
    pub(super) fn buffers(
        &mut self,
        stream: &Arc<CudaStream>,
        io: &CallIo,
        spec_io: &topk_dsl::Io,
    ) -> Result<(RawBuffers, CallBuffers)> {
        let ptr = |s: &CudaSlice<i32>| s.device_ptr(stream).0;
        let buffers = CallBuffers {
            rows: match io.rows {
                RowSource::Lengths(_) => DeviceRows::Lengths,
                RowSource::Window { .. } => DeviceRows::Window {
                    starts: ptr(&self.row_arrays.0),
                    ends: ptr(&self.row_arrays.1),
                },
                RowSource::Decode { next_n, .. } => DeviceRows::Decode {
                    seq_lens: ptr(&self.row_arrays.0),
                    next_n,
                },
            },
            transform: match io.transform {
                IndexTransform::None => DeviceTransform::None,
                IndexTransform::Offset(_) => DeviceTransform::Offset {
                    offsets: ptr(&self.table),
                },
                IndexTransform::Paged(t) => DeviceTransform::Paged {
                    table: ptr(&self.table),
                    columns: page_columns(&t)?,
                    pitch: t.pitch as u64,
                    page_size: t.page_size,
                },
                IndexTransform::PagedRows { table: t, .. } => DeviceTransform::PagedRows {
                    table: ptr(&self.table),
                    columns: page_columns(&t)?,
                    pitch: t.pitch as u64,
                    page_size: t.page_size,
                    rows: ptr(&self.table_rows),
                    // The map's entries were checked against this count on the host.
                    table_rows: u32::try_from(
                        t.data.len().saturating_sub(t.columns) / t.pitch.max(1) + 1,
                    )
                    .unwrap_or(u32::MAX),
                },
            },
            values: if spec_io.values {
                self.values.ptr(stream)
            } else {
                0
            },
            prior: match spec_io.prior {
                topk_dsl::Prior::None => 0,
                topk_dsl::Prior::Bins { .. } => self.prior.device_ptr(stream).0,
            },
            boundary: if spec_io.boundary {
                self.boundary.device_ptr_mut(stream).0
            } else {
                0
            },
        };
        let raw = RawBuffers {
            scores: self.scores.ptr(stream),
            lengths: ptr(&self.row_arrays.0),
            live_rows: ptr(&self.live_rows),
            out: self.out.device_ptr_mut(stream).0,
            row_info: self.info.device_ptr_mut(stream).0,
        };
        Ok((raw, buffers))
    }
}

/// A page table's columns as the launch takes them.
fn page_columns(t: &PageTable) -> Result<u32> {
    u32::try_from(t.columns)
        .map_err(|_| Error::Input(format!("{} page-table columns exceed u32", t.columns)))
}

/// The error for the status bits a call raised, naming a row where the host can find it: a
/// NaN's row and column, or a row whose selection went through a bad page-table entry (the
/// per-row ranges were checked on the host, so a used entry was bad).
pub(super) fn status_error<T: Score>(
    bits: u32,
    scores: &ScoreRows<T>,
    windows: &[RowWindow],
    host_out: &[i32],
    k: usize,
    device_pitch: usize,
) -> Error {
    if bits & status::NAN != 0 {
        return locate_nan_in_windows(scores, windows);
    }
    if bits & status::BAD_TRANSFORM != 0 {
        let short = (0..scores.rows).find(|&row| {
            let n = windows[row].len.min(k);
            host_out[row * device_pitch..][..n].contains(&-1)
        });
        return Error::Input(match short {
            Some(row) => format!(
                "row {row}: a page-table entry its selection uses is negative or makes an \
                 index beyond int32; the entries of used pages must be physical page numbers"
            ),
            None => "the device reported a page-table entry that is negative or makes an \
                     index beyond int32"
                .into(),
        });
    }
    Error::Input(format!(
        "the device reported invalid input (status bits {bits:#x})"
    ))
}

/// Copies `rows` rows of `k` items from `src` (row pitch `src_pitch`) into `dst` (`dst_pitch`).
pub(super) fn copy_rows<V: Copy>(
    src: &[V],
    src_pitch: usize,
    dst: &mut [V],
    dst_pitch: usize,
    rows: usize,
    k: usize,
) {
    for row in 0..rows {
        dst[row * dst_pitch..][..k].copy_from_slice(&src[row * src_pitch..][..k]);
    }
}

/// Scores or values on the device in their dtype: FP32, or the bits of a 16-bit type.
pub(super) enum DeviceScores {
    F32(CudaSlice<f32>),
    Bits16(CudaSlice<u16>),
}

impl DeviceScores {
    fn upload<T: Score>(
        stream: &Arc<CudaStream>,
        data: &[T],
    ) -> std::result::Result<Self, cudarc::driver::DriverError> {
        Ok(match T::DTYPE {
            Dtype::F32 => DeviceScores::F32(stream.clone_htod(T::as_f32(data, &mut Vec::new()))?),
            Dtype::F16 | Dtype::Bf16 => {
                let bits: Vec<u16> = data.iter().map(|x| x.to_bits_u32() as u16).collect();
                DeviceScores::Bits16(stream.clone_htod(&bits)?)
            }
        })
    }

    fn zeros<T: Score>(
        stream: &Arc<CudaStream>,
        len: usize,
    ) -> std::result::Result<Self, cudarc::driver::DriverError> {
        Ok(match T::DTYPE {
            Dtype::F32 => DeviceScores::F32(stream.alloc_zeros(len)?),
            Dtype::F16 | Dtype::Bf16 => DeviceScores::Bits16(stream.alloc_zeros(len)?),
        })
    }

    fn ptr(&mut self, stream: &Arc<CudaStream>) -> cudarc::driver::sys::CUdeviceptr {
        match self {
            DeviceScores::F32(s) => s.device_ptr_mut(stream).0,
            DeviceScores::Bits16(s) => s.device_ptr_mut(stream).0,
        }
    }

    pub(super) fn download<T: Score>(
        &self,
        stream: &Arc<CudaStream>,
    ) -> std::result::Result<Vec<T>, cudarc::driver::DriverError> {
        Ok(match self {
            DeviceScores::F32(s) => stream
                .clone_dtoh(s)?
                .into_iter()
                .map(|x| T::from_bits_u32(x.to_bits()))
                .collect(),
            DeviceScores::Bits16(s) => stream
                .clone_dtoh(s)?
                .into_iter()
                .map(|x| T::from_bits_u32(u32::from(x)))
                .collect(),
        })
    }
}

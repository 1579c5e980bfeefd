//! The CPU backend on host buffers described by raw pointers (NumPy arrays, CPU tensors, any
//! DLPack producer on the CPU): `topk_runtime::cpu::select` with the CLI's default policy.

use crate::errors::to_py;
use topk_dsl::{Spec, MAX_K};
use topk_runtime::{cpu, Error, Result, ScoreMatrix};

/// Lengths as the caller holds them: none (every row full), or int32 / int64 at a stride.
#[derive(Clone, Copy, Debug)]
pub enum HostLengths {
    Full,
    I32 { ptr: u64, stride: isize },
    I64 { ptr: u64, stride: isize },
}

/// One CPU call on host memory.
#[derive(Clone, Copy, Debug)]
pub struct HostCall {
    pub scores: u64,
    pub rows: usize,
    pub width: usize,
    pub pitch: usize,
    pub lengths: HostLengths,
    pub out: u64,
    pub out_pitch: usize,
    pub k: usize,
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

/// Reads the lengths into int32, each checked against `[0, width]` (the error names the row).
///
/// # Safety
/// The lengths pointer must address `rows` elements at its stride.
unsafe fn read_lengths(call: &HostCall) -> Result<Vec<i32>> {
    let bad = |row: usize, len: i64| Error::Length {
        row,
        len,
        width: call.width,
    };
    let mut out = Vec::with_capacity(call.rows);
    for row in 0..call.rows {
        let len: i64 = match call.lengths {
            HostLengths::Full => call.width as i64,
            // SAFETY: the caller vouches for `rows` elements at `stride`.
            HostLengths::I32 { ptr, stride } => unsafe {
                *(ptr as *const i32).offset(row as isize * stride) as i64
            },
            // SAFETY: as above.
            HostLengths::I64 { ptr, stride } => unsafe {
                *(ptr as *const i64).offset(row as isize * stride)
            },
        };
        if len < 0 || len > call.width as i64 {
            return Err(bad(row, len));
        }
        out.push(len as i32);
    }
    Ok(out)
}

/// Selects every row into `out`; on an error nothing is written to `out`.
///
/// # Safety
/// `scores` must address `(rows - 1) * pitch + width` readable f32, the lengths as
/// [`read_lengths`] says, and `out` `(rows - 1) * out_pitch + k` writable i32, none of them
/// changed by anyone else during the call.
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
    // SAFETY: forwarded from the caller.
    let lengths = unsafe { read_lengths(&call)? };
    let mut staged = vec![-1i32; call.rows * call.k];
    if call.width > 0 {
        let span = (call.rows - 1) * call.pitch + call.width;
        // SAFETY: the caller vouches for `span` readable scores.
        let data = unsafe { std::slice::from_raw_parts(call.scores as *const f32, span) };
        let matrix = ScoreMatrix {
            data,
            rows: call.rows,
            width: call.width,
            pitch: call.pitch,
            lengths: &lengths,
        };
        cpu::select(
            &default_spec(call.k, call.width),
            &matrix,
            &mut staged,
            call.k,
            false,
        )?;
    }
    let out = call.out as *mut i32;
    for (row, chunk) in staged.chunks_exact(call.k).enumerate() {
        // SAFETY: row `row` of `out` has `k` writable slots at `row * out_pitch`.
        unsafe {
            std::ptr::copy_nonoverlapping(chunk.as_ptr(), out.add(row * call.out_pitch), call.k)
        };
    }
    Ok(())
}

/// [`select`] as a Python error.
///
/// # Safety
/// As [`select`].
pub unsafe fn select_py(call: HostCall) -> pyo3::PyResult<()> {
    // SAFETY: forwarded.
    unsafe { select(call) }.map_err(to_py)
}

//! `topk._native`: the Rust side of the `topk` Python package. Everything here takes plain
//! integers (device pointers, extents, strides) that the Python layer reads from NumPy arrays,
//! PyTorch tensors or DLPack capsules after checking dtype, rank and strides; the functions
//! check what they rely on again and never panic across the boundary (see `errors::guard`).

mod args;
mod cpu;
mod dlpack;
mod errors;
mod gpu;
mod selector;

use args::*;
use selector::CudaSelector;

use errors::{guard, to_py};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Describes a DLPack capsule: `(ptr, shape, strides, dtype, device_type, device_id,
/// read_only)`, strides in elements. The capsule is not consumed and must outlive `ptr`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn dlpack_describe(
    capsule: &Bound<'_, PyAny>,
) -> PyResult<(u64, Vec<i64>, Vec<i64>, String, i32, i32, bool)> {
    guard(|| {
        let d = dlpack::describe(capsule)?;
        Ok((
            d.ptr,
            d.shape,
            d.strides,
            d.dtype,
            d.device_type,
            d.device_id,
            d.read_only,
        ))
    })
}

/// The DLPack device type codes this module knows: `(cpu, cuda, cuda_host, cuda_managed)`.
#[pyfunction]
fn dlpack_device_types() -> (i32, i32, i32, i32) {
    (
        dlpack::DEVICE_CPU,
        dlpack::DEVICE_CUDA,
        dlpack::DEVICE_CUDA_HOST,
        dlpack::DEVICE_CUDA_MANAGED,
    )
}

/// What the GPU kernels do not generate yet of a call with `dtype` scores and interface `io`
/// (`topk_runtime::cuda::gpu_refusal`, the single source of that list), or `None`.
#[pyfunction]
fn gpu_unsupported(dtype: &str, io: IoArg) -> PyResult<Option<String>> {
    let spec = topk_dsl::Spec {
        dtype: parse_dtype(dtype)?,
        io: parse_io(io)?,
        ..topk_dsl::Spec::default()
    };
    Ok(gpu::unsupported_message(&spec))
}

/// A row's prior margins `P/R` in canonical form, checked as a spec checks them (`ValueError`
/// saying what is wrong otherwise).
#[pyfunction]
fn prior_bins(text: &str) -> PyResult<String> {
    Ok(parse_prior(text)?.to_string())
}

/// Selects on the CPU backend from host pointers, with any part of the call interface
/// (`docs/interface.md`). `dtype` is `f32`, `f16` or `bf16`; `values` is `(ptr, pitch)` of a
/// buffer in that dtype; `prior` `(ptr, len, stride)` of float32 with the margins
/// `prior_bins` (`Prior::SUGGESTED` when not given); `boundary` a pointer to `rows` float32;
/// `page_rows` (with `page_table`) the table row of each score row. Nothing is written to
/// `out`, `values` or `boundary` on error.
#[pyfunction]
#[pyo3(signature = (
    scores, dtype, rows, width, pitch, k, out, out_pitch, *, values=None, lengths=None,
    starts=None, ends=None, relative=true, seq_lens=None, next_n=1, offsets=None,
    page_table=None, page_size=1, sorted=false, deterministic=false, prior=None,
    prior_bins=None, boundary=None, page_rows=None
))]
#[allow(clippy::too_many_arguments)]
fn cpu_select(
    py: Python<'_>,
    scores: u64,
    dtype: &str,
    rows: usize,
    width: usize,
    pitch: usize,
    k: usize,
    out: u64,
    out_pitch: usize,
    values: Option<(u64, usize)>,
    lengths: Option<IntsArg>,
    starts: Option<IntsArg>,
    ends: Option<IntsArg>,
    relative: bool,
    seq_lens: Option<IntsArg>,
    next_n: u32,
    offsets: Option<IntsArg>,
    page_table: Option<TableArg>,
    page_size: u32,
    sorted: bool,
    deterministic: bool,
    prior: Option<(u64, usize, isize)>,
    prior_bins: Option<&str>,
    boundary: Option<u64>,
    page_rows: Option<IntsArg>,
) -> PyResult<()> {
    let dtype = parse_dtype(dtype)?;
    let prior_bins = match prior_bins {
        Some(text) => parse_prior(text)?,
        None => topk_dsl::Prior::SUGGESTED,
    };
    let prior = match prior {
        Some((_, len, _)) if len < rows => {
            return Err(PyValueError::new_err(format!(
                "prior holds {len} values for {rows} rows: pass one per row"
            )))
        }
        Some((0, len, _)) if len > 0 => {
            return Err(PyValueError::new_err("prior has no data pointer"))
        }
        Some((ptr, len, stride)) => Some(cpu::HostFloats { ptr, len, stride }),
        None => None,
    };
    if rows > 0 && boundary == Some(0) {
        return Err(PyValueError::new_err("boundary needs a data pointer"));
    }
    if pitch < width || out_pitch < k || values.is_some_and(|(_, p)| p < k) {
        return Err(PyValueError::new_err(
            "row strides must be at least the width (scores) and K (out, values)",
        ));
    }
    if rows > 0 && (out == 0 || values.is_some_and(|(p, _)| p == 0) || (scores == 0 && width > 0)) {
        return Err(PyValueError::new_err(
            "scores, out and values need data pointers",
        ));
    }
    let source = host_rows(lengths, starts, ends, relative, seq_lens, next_n)?;
    let transform = match (offsets, page_table, page_rows) {
        (None, None, None) => cpu::HostTransform::None,
        (Some(o), None, None) => cpu::HostTransform::Offset(host_ints("offsets", o)?),
        (None, Some(table), None) => cpu::HostTransform::Paged {
            table: host_table(table)?,
            page_size,
        },
        (None, Some(table), Some(map)) => cpu::HostTransform::PagedRows {
            table: host_table(table)?,
            page_size,
            rows: host_ints("page_rows", map)?,
        },
        (_, None, Some(_)) => {
            return Err(PyValueError::new_err(
                "page_rows goes with page_table: row r reads table row page_rows[r]",
            ))
        }
        (Some(_), Some(_), _) => {
            return Err(PyValueError::new_err(
                "give one transform: offsets or page_table",
            ))
        }
    };
    let call = cpu::HostCall {
        scores,
        dtype,
        rows,
        width,
        pitch,
        k,
        out,
        out_pitch,
        values,
        source,
        transform,
        sorted,
        lowest_ties: deterministic,
        prior,
        prior_bins,
        boundary,
    };
    // SAFETY: the Python layer passes pointers of live arrays it holds for the call, with the
    // extents it checked.
    guard(|| py.detach(|| unsafe { cpu::select_py(call) }))
}

/// The CPU backend's policy for K and width (the canonical spec text).
#[pyfunction]
fn cpu_spec(k: usize, width: usize) -> String {
    cpu::default_spec(k, width).to_string()
}

/// The device call of an eager `cuda_select*`: `extents` are `(rows, width, pitch, out_pitch,
/// k)` as Python passes them; the live row count is `rows`.
fn eager_call(
    device: usize,
    stream: u64,
    scores: u64,
    lengths: u64,
    out: u64,
    (rows, width, pitch, out_pitch, k): (u64, u64, u64, u64, u64),
    iface: gpu::Interface,
) -> PyResult<gpu::DeviceCall> {
    Ok(gpu::DeviceCall {
        device,
        stream,
        scores,
        rows: to_u32("rows", rows)?,
        width: to_u32("width", width)?,
        pitch,
        lengths,
        live_rows: 0,
        out,
        out_pitch,
        k: to_u32("K", k)?,
        iface,
    })
}

/// An eager GPU call on the caller's stream with the cached plan of its capacity bucket.
/// `lengths` 0: every row full. With `check`, synchronizes and raises on the status word.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cuda_select(
    py: Python<'_>,
    device: usize,
    stream: u64,
    scores: u64,
    rows: u64,
    width: u64,
    pitch: u64,
    lengths: u64,
    out: u64,
    out_pitch: u64,
    k: u64,
    check: bool,
) -> PyResult<()> {
    let extents = (rows, width, pitch, out_pitch, k);
    let call = eager_call(
        device,
        stream,
        scores,
        lengths,
        out,
        extents,
        gpu::Interface::PLAIN,
    )?;
    if call.rows == 0 {
        return Ok(());
    }
    // SAFETY: the Python layer passes pointers of live tensors of `device` it holds for the
    // call, with the extents it checked, and the caller's current stream.
    guard(|| py.detach(|| gpu::keeping_context(|| unsafe { gpu::select(call, check) })))
}

/// An eager GPU call with a call interface (`docs/interface.md`): `dtype` scores, the form
/// `io` and its device buffers `buffers`, on the caller's stream with the cached plan of its
/// capacity bucket, dtype and form. `lengths` 0 with `rows=lengths`: every row full. With
/// `check`, synchronizes and returns the status bits raised (0 without).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cuda_select_call(
    py: Python<'_>,
    device: usize,
    stream: u64,
    scores: u64,
    dtype: &str,
    rows: u64,
    width: u64,
    pitch: u64,
    lengths: u64,
    out: u64,
    out_pitch: u64,
    k: u64,
    io: IoArg,
    buffers: BuffersArg,
    check: bool,
) -> PyResult<u32> {
    let io = parse_io(io)?;
    let iface = gpu::Interface {
        dtype: parse_dtype(dtype)?,
        io,
        buffers: device_buffers(&io, buffers)?,
    };
    let extents = (rows, width, pitch, out_pitch, k);
    let call = eager_call(device, stream, scores, lengths, out, extents, iface)?;
    if call.rows == 0 {
        return Ok(0);
    }
    // SAFETY: as `cuda_select`; the interface's buffers are live tensors of `device` with the
    // extents the Python layer checked.
    guard(|| {
        py.detach(|| gpu::keeping_context(|| unsafe { gpu::launch_eager(&call, check) }))
            .map(|(bits, _)| bits)
    })
}

/// Whether a GPU can run the kernels here, and if not, why.
#[pyfunction]
fn cuda_status(py: Python<'_>, device: usize) -> (bool, String) {
    match guard(|| gpu::keeping_context(|| gpu::gpu(device).map_err(to_py))) {
        Ok(g) => {
            let p = g.props();
            let about = format!(
                "{} (compute capability {}.{})",
                p.name, p.cc_major, p.cc_minor
            );
            (true, about)
        }
        Err(e) => {
            let message = e.value(py).str().map(|s| s.to_string());
            (false, message.unwrap_or_else(|_| e.to_string()))
        }
    }
}

/// Waits for every device and frees the cached plans, workspaces and device arrays.
#[pyfunction]
fn release(py: Python<'_>) -> PyResult<()> {
    if !topk_runtime::cuda::Gpu::available() {
        return Ok(()); // nothing was opened
    }
    guard(|| py.detach(|| gpu::keeping_context(gpu::release)))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dlpack_describe, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_device_types, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_select, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_spec, m)?)?;
    m.add_function(wrap_pyfunction!(prior_bins, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_select, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_select_call, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_unsupported, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_status, m)?)?;
    m.add_function(wrap_pyfunction!(release, m)?)?;
    m.add_class::<CudaSelector>()?;
    m.add("MAX_K", topk_dsl::MAX_K)?;
    m.add("PRIOR_SUGGESTED", topk_dsl::Prior::SUGGESTED.to_string())?;
    Ok(())
}

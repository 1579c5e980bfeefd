//! `topk._native`: the Rust side of the `topk` Python package. Everything here takes plain
//! integers (device pointers, extents, strides) that the Python layer reads from NumPy arrays,
//! PyTorch tensors or DLPack capsules after checking dtype, rank and strides; the functions
//! check what they rely on again and never panic across the boundary (see `errors::guard`).

mod cpu;
mod dlpack;
mod errors;
mod gpu;

use errors::{guard, to_py};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use topk_dsl::{Dtype, Io, Order, Rows, Ties, Transform};
use topk_runtime::cuda::{CallBuffers, DeviceRows, DeviceTransform};

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

fn to_u32(what: &str, v: u64) -> PyResult<u32> {
    u32::try_from(v).map_err(|_| PyValueError::new_err(format!("{what} {v} does not fit 32 bits")))
}

/// The form of a call's interface from Python: `(values, sorted, deterministic, rows,
/// transform)`, `rows` one of `lengths`, `window`, `window_absolute`, `decode` and `transform`
/// one of `none`, `offset`, `paged` (`docs/interface.md`).
type IoArg = (bool, bool, bool, String, String);

/// Device pointers and scalars of a call's interface: `(values, starts, ends, seq_lens,
/// next_n, offsets, page_table, page_columns, page_pitch, page_size)`; 0 where unused.
type BuffersArg = (u64, u64, u64, u64, u64, u64, u64, u64, u64, u64);

fn parse_dtype(dtype: &str) -> PyResult<Dtype> {
    dtype
        .parse()
        .map_err(|_| PyValueError::new_err(format!("unknown score dtype `{dtype}`")))
}

fn parse_io((values, sorted, deterministic, rows, transform): IoArg) -> PyResult<Io> {
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
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown index transform `{other}`: none, offset or paged"
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
    })
}

/// The device buffers of an interface `io`, each one it names present (a pointer of 0 is a
/// missing argument).
fn device_buffers(io: &Io, b: BuffersArg) -> PyResult<CallBuffers> {
    let (values, starts, ends, seq_lens, next_n, offsets, table, columns, table_pitch, page_size) =
        b;
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
    };
    let values = if io.values {
        need(values, "values")?
    } else {
        0
    };
    Ok(CallBuffers {
        rows,
        transform,
        values,
    })
}

/// What the GPU kernels do not generate yet of a call with `dtype` scores and interface `io`
/// (`Spec::gpu_unsupported`, the single source of that list), or `None`.
#[pyfunction]
fn gpu_unsupported(dtype: &str, io: IoArg) -> PyResult<Option<String>> {
    let spec = topk_dsl::Spec {
        dtype: parse_dtype(dtype)?,
        io: parse_io(io)?,
        ..topk_dsl::Spec::default()
    };
    Ok(gpu::unsupported_message(&spec))
}

/// A 1-D int32/int64 host array from Python: `(ptr, bits, len, stride)`, stride in elements.
type IntsArg = (u64, u32, usize, isize);
/// A 2-D int32/int64 host array: `(ptr, bits, rows, columns, row_stride, col_stride)`.
type TableArg = (u64, u32, usize, usize, isize, isize);

fn host_ints(name: &str, a: IntsArg) -> PyResult<cpu::HostInts> {
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

fn host_table(t: TableArg) -> PyResult<cpu::HostTable> {
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
fn host_rows(
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

/// Selects on the CPU backend from host pointers, with any part of the call interface
/// (`docs/interface.md`). `dtype` is `f32`, `f16` or `bf16`; `values` is `(ptr, pitch)` of a
/// buffer in that dtype. Nothing is written to `out` or `values` on error.
#[pyfunction]
#[pyo3(signature = (
    scores, dtype, rows, width, pitch, k, out, out_pitch, *, values=None, lengths=None,
    starts=None, ends=None, relative=true, seq_lens=None, next_n=1, offsets=None,
    page_table=None, page_size=1, sorted=false, deterministic=false
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
) -> PyResult<()> {
    let dtype = parse_dtype(dtype)?;
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
    let transform = match (offsets, page_table) {
        (None, None) => cpu::HostTransform::None,
        (Some(o), None) => cpu::HostTransform::Offset(host_ints("offsets", o)?),
        (None, Some(table)) => cpu::HostTransform::Paged {
            table: host_table(table)?,
            page_size,
        },
        (Some(_), Some(_)) => {
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
    let call = gpu::DeviceCall {
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
        iface: gpu::Interface::PLAIN,
    };
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
    let call = gpu::DeviceCall {
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
    };
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

/// A plan for fixed capacities on one device with its workspaces (`topk.Selector` on a GPU).
#[pyclass(module = "topk._native", frozen)]
struct CudaSelector {
    inner: gpu::Selector,
    k: u32,
}

impl CudaSelector {
    fn io(&self) -> Io {
        self.inner.plan.spec.io
    }
}

#[pymethods]
impl CudaSelector {
    /// A plan for `dtype` scores with the interface `io` (the plain float32 operator when
    /// not given).
    #[new]
    #[pyo3(signature = (device, k, max_rows, max_width, dtype="f32", io=None))]
    fn new(
        py: Python<'_>,
        device: usize,
        k: u64,
        max_rows: u64,
        max_width: u64,
        dtype: &str,
        io: Option<IoArg>,
    ) -> PyResult<Self> {
        let (k, max_rows, max_width) = (
            to_u32("K", k)?,
            to_u32("max_rows", max_rows)?,
            to_u32("max_width", max_width)?,
        );
        let dtype = parse_dtype(dtype)?;
        let io = io.map(parse_io).transpose()?.unwrap_or(Io::DEFAULT);
        let inner = guard(|| {
            py.detach(|| {
                gpu::keeping_context(|| {
                    gpu::Selector::new(device, k, max_rows, max_width, dtype, io)
                })
            })
        })?;
        Ok(CudaSelector { inner, k })
    }

    /// Launches one call on `stream`. `lengths` 0: every row full; `live_rows` 0: all rows;
    /// `buffers`: the device buffers of the plan's interface (see `cuda_select_call`).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (stream, scores, rows, width, pitch, lengths, live_rows, out, out_pitch, buffers=None))]
    fn run(
        &self,
        py: Python<'_>,
        stream: u64,
        scores: u64,
        rows: u64,
        width: u64,
        pitch: u64,
        lengths: u64,
        live_rows: u64,
        out: u64,
        out_pitch: u64,
        buffers: Option<BuffersArg>,
    ) -> PyResult<()> {
        let mut call = self.call(
            stream, scores, rows, width, pitch, lengths, live_rows, out, out_pitch,
        )?;
        let io = self.io();
        call.iface.buffers = device_buffers(&io, buffers.unwrap_or_default())?;
        // SAFETY: as `cuda_select`.
        guard(|| py.detach(|| gpu::keeping_context(|| unsafe { self.inner.run(call) })))
    }

    /// Status bits raised since the last call of this method (all streams), then cleared.
    fn take_status(&self, py: Python<'_>) -> PyResult<u32> {
        guard(|| py.detach(|| gpu::keeping_context(|| self.inner.take_status())))
    }

    /// Reads a call's inputs back and names the first offending row, if any.
    #[allow(clippy::too_many_arguments)]
    fn locate(
        &self,
        py: Python<'_>,
        scores: u64,
        rows: u64,
        width: u64,
        pitch: u64,
        lengths: u64,
    ) -> PyResult<Option<String>> {
        let call = self.call(0, scores, rows, width, pitch, lengths, 0, 0, self.k as u64)?;
        guard(|| py.detach(|| gpu::keeping_context(|| Ok(self.inner.locate(&call)))))
    }

    /// The error the status bits stand for, with `found` appended.
    #[staticmethod]
    #[pyo3(signature = (bits, found=None))]
    fn status_error(bits: u32, found: Option<String>) -> PyErr {
        gpu::status_error(bits, found)
    }

    /// The spec the plan runs (canonical text).
    #[getter]
    fn spec(&self) -> String {
        self.inner.plan.spec.to_string()
    }

    /// The kernel family: persistent, rowlocal_register, rowlocal_streaming, kvsplit, cluster
    /// or staged.
    #[getter]
    fn family(&self) -> &'static str {
        gpu::family_name(&self.inner.plan)
    }

    /// Where the spec came from: given, tuned or default.
    #[getter]
    fn source(&self) -> String {
        format!("{:?}", self.inner.plan.source)
    }

    #[getter]
    fn grid(&self) -> u32 {
        self.inner.plan.grid
    }

    #[getter]
    fn workspace_bytes(&self) -> u64 {
        self.inner.plan.workspace_bytes
    }
}

impl CudaSelector {
    #[allow(clippy::too_many_arguments)]
    fn call(
        &self,
        stream: u64,
        scores: u64,
        rows: u64,
        width: u64,
        pitch: u64,
        lengths: u64,
        live_rows: u64,
        out: u64,
        out_pitch: u64,
    ) -> PyResult<gpu::DeviceCall> {
        Ok(gpu::DeviceCall {
            device: self.inner.device,
            stream,
            scores,
            rows: to_u32("rows", rows)?,
            width: to_u32("width", width)?,
            pitch,
            lengths,
            live_rows,
            out,
            out_pitch,
            k: self.k,
            iface: gpu::Interface {
                dtype: self.inner.plan.spec.dtype,
                io: self.io(),
                buffers: CallBuffers::PLAIN,
            },
        })
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dlpack_describe, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_device_types, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_select, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_spec, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_select, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_select_call, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_unsupported, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_status, m)?)?;
    m.add_function(wrap_pyfunction!(release, m)?)?;
    m.add_class::<CudaSelector>()?;
    m.add("MAX_K", topk_dsl::MAX_K)?;
    Ok(())
}

//! `topk.Selector` on a GPU: a plan for fixed capacities on one device, with its workspaces.

use crate::args::*;
use crate::errors::guard;
use crate::gpu;
use pyo3::prelude::*;
use topk_dsl::Io;
use topk_runtime::cuda::CallBuffers;

/// A plan for fixed capacities on one device with its workspaces (`topk.Selector` on a GPU).
#[pyclass(module = "topk._native", frozen)]
pub(crate) struct CudaSelector {
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

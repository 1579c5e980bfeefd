//! Which plan serves an eager call: capacity buckets, and the spec of a call interface beyond
//! the plain float32 operator.

use super::context::RelaxedCapture;
use crate::errors::to_py;
use pyo3::exceptions::PyNotImplementedError;
use pyo3::PyResult;
use topk_dsl::{Digits, Dtype, Io, Spec};
use topk_runtime::cuda::{Gpu, Plan, PlanRequest};

/// The capacity bucket of an eager call: rows and width rounded up to powers of two, so a
/// handful of plans serve calls of every size.
pub(super) fn bucket(rows: u32, width: u32) -> (u32, u32) {
    let max_width = topk_runtime::cuda::plan::MAX_WIDTH;
    (
        rows.max(1).next_power_of_two(),
        width
            .max(1)
            .checked_next_power_of_two()
            .unwrap_or(max_width)
            .min(max_width),
    )
}

/// What an eager plan is cached under: K, the capacity bucket, the score dtype and the
/// interface.
pub(super) type PlanKey = (u32, u32, u32, Dtype, Io);

/// The spec of a plan for a call interface beyond the plain float32 operator: the default
/// map's choice for the shape on this device (the autotune store's records are for the plain
/// operator) with the score dtype and the interface. `NotImplementedError` with the sentence
/// of `topk_runtime::cuda::gpu_refusal` for what the GPU path does not run.
pub fn interface_spec(
    gpu: &Gpu,
    k: u32,
    m_cap: u32,
    width: u32,
    dtype: Dtype,
    io: Io,
) -> PyResult<Spec> {
    let mut spec = topk_runtime::policy::default_spec_for(&gpu.facts(), k, m_cap, width, io);
    if dtype != Dtype::F32 {
        spec.digits = Digits::default_for(dtype, spec.coarse_bits);
    }
    spec.dtype = dtype;
    refuse_unsupported(&spec)?;
    spec.validate().map_err(|e| to_py(e.into()))?;
    Ok(spec)
}

/// What of `spec` the GPU path does not run, as the Python package says it: the sentence of
/// `topk_runtime::cuda::gpu_refusal` (the single source of that list) and the Python way to
/// the CPU backend.
pub fn unsupported_message(spec: &Spec) -> Option<String> {
    topk_runtime::cuda::gpu_refusal(spec).map(|why| {
        format!(
            "on CUDA inputs: {why}; from Python, pass CPU tensors or NumPy arrays (the CPU \
             backend implements the whole call interface)"
        )
    })
}

/// `NotImplementedError` saying what of `spec` the GPU kernels do not generate yet, if any.
pub fn refuse_unsupported(spec: &Spec) -> PyResult<()> {
    match unsupported_message(spec) {
        Some(why) => Err(PyNotImplementedError::new_err(why)),
        None => Ok(()),
    }
}

/// A plan for `k` over `m_cap` rows of `width` with `dtype` scores and interface `io`: the
/// planner's own choice (autotune store or default map) for the plain float32 operator.
pub(super) fn plan_for(
    gpu: &Gpu,
    k: u32,
    m_cap: u32,
    width: u32,
    dtype: Dtype,
    io: Io,
) -> PyResult<Plan> {
    let _relaxed = RelaxedCapture::new();
    let request = PlanRequest::new(k, m_cap, width);
    if dtype == Dtype::F32 && io.is_default() {
        return Plan::new(gpu, request).map_err(to_py);
    }
    let spec = interface_spec(gpu, k, m_cap, width, dtype, io)?;
    Plan::new(gpu, request.with_spec(spec)).map_err(to_py)
}

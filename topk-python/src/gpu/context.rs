//! The thread's CUDA state around the package's work: relaxed stream capture while planning
//! and allocating, and the caller's current context kept.

use crate::errors::to_py;
use pyo3::exceptions::PyRuntimeError;
use pyo3::PyResult;
use topk_runtime::cuda::cudarc::driver::{result as cu, sys};
use topk_runtime::cuda::Gpu;
use topk_runtime::{Error, Result};

/// Relaxed stream-capture mode on this thread while it lives: planning and allocating are then
/// allowed while another stream of the process captures a graph.
pub(super) struct RelaxedCapture {
    previous: sys::CUstreamCaptureMode,
}

impl RelaxedCapture {
    pub(super) fn new() -> RelaxedCapture {
        let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: only called once a device is usable (libcuda loaded); `mode` is valid.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
        RelaxedCapture { previous: mode }
    }
}

impl Drop for RelaxedCapture {
    fn drop(&mut self) {
        // SAFETY: restores the mode this thread had.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut self.previous) };
    }
}

/// The device's context made current on this thread for a launch, and the thread's previous
/// context restored afterwards (PyTorch reads its current device from it).
pub(super) struct BoundContext {
    previous: Option<sys::CUcontext>,
}

impl BoundContext {
    pub(super) fn bind(gpu: &Gpu) -> Result<BoundContext> {
        let ours = gpu.ctx().cu_ctx();
        let current =
            cu::ctx::get_current().map_err(|e| Error::Cuda(format!("cuCtxGetCurrent: {e}")))?;
        if current == Some(ours) {
            return Ok(BoundContext { previous: None });
        }
        // SAFETY: `ours` is the device's primary context, retained by `gpu`.
        unsafe { cu::ctx::set_current(ours) }
            .map_err(|e| Error::Cuda(format!("cuCtxSetCurrent: {e}")))?;
        Ok(BoundContext {
            previous: Some(current.unwrap_or(std::ptr::null_mut())),
        })
    }
}

impl Drop for BoundContext {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            // SAFETY: `previous` was current on this thread a moment ago (or null: none).
            let _ = unsafe { cu::ctx::set_current(previous) };
        }
    }
}

/// Runs `f` and then makes the thread's current context the one it had before (opening a
/// device, planning and allocating bind the device's context; PyTorch reads its current device
/// from the thread's context). Fails, saying why, when no GPU is usable.
pub fn keeping_context<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    if !Gpu::available() {
        // Opening yields the reason (no driver, no device, no NVRTC, ...).
        return match Gpu::open(0) {
            Err(e) => Err(to_py(e)),
            Ok(_) => Err(PyRuntimeError::new_err("no usable CUDA device")),
        };
    }
    let saved = cu::ctx::get_current().ok().flatten();
    let result = f();
    let now = cu::ctx::get_current().ok().flatten();
    if now != saved {
        // SAFETY: `saved` was current on this thread before `f` (or null: none was).
        let _ = unsafe { cu::ctx::set_current(saved.unwrap_or(std::ptr::null_mut())) };
    }
    result
}

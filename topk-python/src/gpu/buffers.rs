//! Device arrays the package owns: int32 arrays that only grow (a captured graph may still read
//! the old ones) and a plan's workspaces, one per stream.

use super::context::{BoundContext, RelaxedCapture};
use std::sync::Arc;
use topk_runtime::cuda::cudarc::driver::{sys, CudaSlice, CudaStream, DevicePtr};
use topk_runtime::cuda::{Gpu, Plan, Workspace};
use topk_runtime::{Error, Result};

/// A device array of int32 that only grows; buffers it outgrew stay allocated.
#[derive(Default)]
pub(super) struct GrowingArray {
    live: Option<(CudaSlice<i32>, u64)>,
    retired: Vec<CudaSlice<i32>>,
}

impl GrowingArray {
    /// A device pointer to at least `need` values `fill(i)`.
    pub(super) fn at_least(
        &mut self,
        gpu: &Gpu,
        need: usize,
        fill: impl Fn(usize) -> i32,
    ) -> Result<u64> {
        if let Some((slice, ptr)) = &self.live {
            if slice.len() >= need {
                return Ok(*ptr);
            }
        }
        let cap = need.max(1024).next_power_of_two();
        let values: Vec<i32> = (0..cap).map(fill).collect();
        let _relaxed = RelaxedCapture::new();
        let stream = gpu.stream();
        let slice = stream
            .clone_htod(&values)
            .map_err(|e| Error::Cuda(format!("allocating {} bytes: {e}", cap * 4)))?;
        stream
            .synchronize()
            .map_err(|e| Error::Cuda(format!("synchronizing the upload: {e}")))?;
        let ptr = slice.device_ptr(stream).0;
        if let Some((old, _)) = self.live.replace((slice, ptr)) {
            self.retired.push(old);
        }
        Ok(ptr)
    }
}

/// A plan's workspaces, one per stream it has run on, with the stream wrapped for launches.
#[derive(Default)]
pub struct Workspaces {
    by_stream: Vec<(u64, Arc<CudaStream>, Workspace)>,
}

impl Workspaces {
    pub(super) fn for_stream(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        stream: u64,
    ) -> Result<(&Arc<CudaStream>, &mut Workspace)> {
        let at = match self.by_stream.iter().position(|(s, _, _)| *s == stream) {
            Some(at) => at,
            None => {
                let _relaxed = RelaxedCapture::new();
                let workspace = Workspace::new(plan, gpu.stream())?;
                gpu.stream()
                    .synchronize()
                    .map_err(|e| Error::Cuda(format!("synchronizing the workspace: {e}")))?;
                // SAFETY: `stream` is a live stream of this device's primary context (the
                // caller's current stream); it is only used while the caller's call runs.
                let wrapped = unsafe { gpu.ctx().wrap_borrowed_stream(stream as sys::CUstream) };
                self.by_stream.push((stream, wrapped, workspace));
                self.by_stream.len() - 1
            }
        };
        let (_, wrapped, workspace) = &mut self.by_stream[at];
        Ok((wrapped, workspace))
    }

    /// Status bits of every workspace (each read on its stream, which synchronizes it), then
    /// cleared.
    pub(super) fn take_status(&mut self, gpu: &Gpu) -> Result<u32> {
        let _bound = BoundContext::bind(gpu)?;
        let mut bits = 0;
        for (_, stream, workspace) in &mut self.by_stream {
            bits |= workspace.status(stream)?;
            workspace.clear_status(stream)?;
        }
        Ok(bits)
    }
}

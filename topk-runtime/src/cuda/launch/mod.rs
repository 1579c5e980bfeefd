//! Workspace and launch: the typed API over cudarc views, and a raw one over device pointers.

use super::plan::{Plan, CONTROL_WORDS};
use crate::{Error, Result};
use cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, LaunchConfig,
};
use std::sync::Arc;
use topk_codegen::interface::control;

mod buffers;

pub use buffers::{CallBuffers, DeviceRows, DeviceTransform, RawBuffers};

/// Status bits the kernels raise in the workspace (read with [`Workspace::status`]).
pub use topk_codegen::interface::status;

// The planner sizes the control block; the kernels' words are those of the interface.
const _: () = assert!(CONTROL_WORDS == control::WORDS);

/// Device memory a Plan needs besides its inputs and outputs: the control block (work cursor,
/// exit counter, status) and per-worker frontier spill slices. Its size depends on the plan's
/// grid and width, never on the live rows, and the kernels hand the counters back zeroed.
/// A `map=staged` plan's workspace is instead the stage chain's regions (one block of words,
/// grown with M_cap and K), cleared at the start of every call.
pub struct Workspace {
    pub(super) control: CudaSlice<u32>,
    pub(super) spill: CudaSlice<i32>,
    grid: u32,
    spill_cap: u32,
    /// Index in `control` of the status word.
    status_word: usize,
    /// Words of `control` that [`Workspace::clear_status`] zeroes: the control block, or the
    /// stage chain's status words (each staged call clears the rest itself).
    clear: std::ops::Range<usize>,
}

impl Workspace {
    /// Allocates (zeroed) the workspace of `plan` on `stream`.
    pub fn new(plan: &Plan, stream: &Arc<CudaStream>) -> Result<Workspace> {
        if let Some(stages) = &plan.stages {
            let regions = &stages.regions;
            let control = stream
                .alloc_zeros::<u32>(regions.total)
                .map_err(Error::driver(&format!(
                    "allocating {} bytes of staged workspace",
                    regions.total * 4
                )))?;
            let spill = stream
                .alloc_zeros::<i32>(1)
                .map_err(Error::driver("allocating the workspace"))?;
            return Ok(Workspace {
                control,
                spill,
                grid: plan.grid,
                spill_cap: plan.spill_cap,
                status_word: regions.status.start,
                clear: regions.status.clone(),
            });
        }
        let spill_words = plan.spill_words().max(1);
        let control = stream
            .alloc_zeros::<u32>(CONTROL_WORDS)
            .map_err(Error::driver("allocating the control block"))?;
        let spill = stream
            .alloc_zeros::<i32>(spill_words)
            .map_err(Error::driver(&format!(
                "allocating {} bytes of frontier spill",
                spill_words * 4
            )))?;
        Ok(Workspace {
            control,
            spill,
            grid: plan.grid,
            spill_cap: plan.spill_cap,
            status_word: control::STATUS,
            clear: 0..CONTROL_WORDS,
        })
    }

    /// Status bits raised since the last [`Workspace::clear_status`] (a `map=staged` plan: by
    /// the last call); synchronizes the stream.
    pub fn status(&self, stream: &Arc<CudaStream>) -> Result<u32> {
        let words = stream
            .clone_dtoh(&self.control.slice(self.status_word..self.status_word + 1))
            .map_err(Error::driver("reading the status word"))?;
        Ok(words[0])
    }

    /// Zeroes the whole control block (also a recovery step after an aborted launch); for a
    /// `map=staged` plan, its status words.
    pub fn clear_status(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        stream
            .memset_zeros(&mut self.control.slice_mut(self.clear.clone()))
            .map_err(Error::driver("clearing the control block"))
    }
}

/// Device inputs and outputs of one call, as cudarc views.
pub struct LaunchBuffers<'a, 'b> {
    /// `M_cap x pitch` scores (the last row may stop at `width`).
    pub scores: &'a CudaView<'b, f32>,
    /// `M_cap` valid lengths.
    pub lengths: &'a CudaView<'b, i32>,
    /// One int: the live row count `m <= M_cap`.
    pub live_rows: &'a CudaView<'b, i32>,
    /// `M_cap x out_pitch` indices; rows `>= m` are not touched.
    pub out: &'a mut CudaViewMut<'b, i32>,
    /// Optional `2 * M_cap` ints: (route, |Q0|) per row, for statistics.
    pub row_info: Option<&'a mut CudaViewMut<'b, i32>>,
}

impl Plan {
    pub(super) fn launch_config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.grid, 1, 1),
            block_dim: (self.block, 1, 1),
            shared_mem_bytes: self.smem,
        }
    }

    /// Words of the workspace after the control block: the spill slices and any staging (a
    /// staged plan keeps its workspace in its regions instead).
    fn spill_words(&self) -> usize {
        (self.workspace_bytes as usize / 4).saturating_sub(CONTROL_WORDS)
    }

    pub(super) fn check_workspace(&self, ws: &Workspace) -> Result<()> {
        let words = match &self.stages {
            Some(stages) => stages.regions.total,
            None => CONTROL_WORDS,
        };
        if ws.grid != self.grid
            || ws.spill_cap != self.spill_cap
            || ws.control.len() != words
            || (self.stages.is_none() && ws.spill.len() < self.spill_words())
        {
            return Err(Error::Input(
                "workspace was made for another plan: allocate it with Workspace::new(&plan, ..)"
                    .into(),
            ));
        }
        Ok(())
    }

    fn check_len(&self, what: &str, have: usize, need: u64) -> Result<()> {
        if (have as u64) < need {
            return Err(Error::Input(format!(
                "{what} holds {have} elements but the plan (M_cap = {}, width = {}, pitch = {}, K = {}) needs {need}",
                self.request.m_cap, self.request.width, self.request.pitch, self.request.k
            )));
        }
        Ok(())
    }

    fn needs(&self) -> (u64, u64) {
        let r = &self.request;
        let m = r.m_cap.max(1) as u64;
        (
            (m - 1) * r.pitch + r.width as u64,
            (m - 1) * r.out_pitch + r.k as u64,
        )
    }

    /// Launches the selector on `stream` (a plan of the plain operator's interface: see
    /// [`Plan::launch_call_with`] for the others). Graph-capturable: no allocation, no host
    /// read-back.
    ///
    /// ```no_run
    /// use topk_runtime::cuda::{Gpu, LaunchBuffers, Plan, PlanRequest, Workspace};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let gpu = Gpu::open(0)?;
    /// let plan = Plan::new(&gpu, PlanRequest::new(2048, 64, 262_144))?;
    /// let stream = gpu.stream();
    /// let mut ws = Workspace::new(&plan, stream)?;
    /// let scores = stream.alloc_zeros::<f32>(64 * 262_144)?;
    /// let lengths = stream.clone_htod(&vec![262_144i32; 64])?;
    /// let live_rows = stream.clone_htod(&[64i32])?;
    /// let mut out = stream.alloc_zeros::<i32>(64 * 2048)?;
    /// let (s, l, m) = (scores.slice(..), lengths.slice(..), live_rows.slice(..));
    /// let mut o = out.slice_mut(..);
    /// let io = LaunchBuffers { scores: &s, lengths: &l, live_rows: &m, out: &mut o, row_info: None };
    /// plan.launch(stream, io, &mut ws)?;
    /// assert_eq!(ws.status(stream)?, 0); // no NaN, bad length or row count
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Input`] when a buffer is smaller than the plan's extents or `ws` was made for
    /// another plan; [`Error::Cuda`] when the launch fails.
    pub fn launch(
        &self,
        stream: &Arc<CudaStream>,
        io: LaunchBuffers<'_, '_>,
        ws: &mut Workspace,
    ) -> Result<()> {
        self.check_workspace(ws)?;
        if self.spec.dtype != topk_dsl::Dtype::F32 {
            return Err(Error::Input(format!(
                "the plan's spec has dtype={} but these scores are f32; launch scores of the \
                 spec's dtype with `launch_call_with` (or plan for f32)",
                self.spec.dtype
            )));
        }
        let (scores_need, out_need) = self.needs();
        self.check_len("scores", io.scores.len(), scores_need)?;
        self.check_len("lengths", io.lengths.len(), self.request.m_cap as u64)?;
        self.check_len("live_rows", io.live_rows.len(), 1)?;
        self.check_len("out", io.out.len(), out_need)?;
        if let Some(info) = &io.row_info {
            self.check_len("row_info", info.len(), 2 * self.request.m_cap as u64)?;
        }
        let (scores, _s) = io.scores.device_ptr(stream);
        let (lengths, _l) = io.lengths.device_ptr(stream);
        let (live, _r) = io.live_rows.device_ptr(stream);
        let (out, _o) = io.out.device_ptr_mut(stream);
        let info = match io.row_info {
            Some(v) => v.device_ptr_mut(stream).0,
            None => 0,
        };
        let raw = RawBuffers {
            scores,
            lengths,
            live_rows: live,
            out,
            row_info: info,
        };
        // SAFETY: every pointer comes from a live view checked above against the plan's extents.
        unsafe { self.launch_raw(stream, raw, ws) }
    }

    /// Launches on raw device pointers (for producers outside cudarc) on `stream`.
    ///
    /// # Safety
    /// `io.scores` must point to `(M_cap - 1) * pitch + width` readable scores of the spec's dtype, `io.lengths` to
    /// `M_cap` i32, `io.live_rows` to one i32, `io.out` to `(M_cap - 1) * out_pitch + K`
    /// writable i32 and `io.row_info`, when non-zero, to `2 * M_cap` writable i32, all in this
    /// plan's context and not written by other work while the kernel runs.
    ///
    /// # Errors
    /// [`Error::Input`] when `ws` was made for another plan; [`Error::Cuda`] when the launch
    /// fails.
    ///
    /// ```no_run
    /// use topk_runtime::cuda::cudarc::driver::{DevicePtr, DevicePtrMut};
    /// use topk_runtime::cuda::{Gpu, Plan, PlanRequest, RawBuffers, Workspace};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let gpu = Gpu::open(0)?;
    /// let plan = Plan::new(&gpu, PlanRequest::new(2048, 64, 262_144))?;
    /// let stream = gpu.stream();
    /// let mut ws = Workspace::new(&plan, stream)?;
    /// // Buffers owned elsewhere (a framework's tensors); here cudarc allocates them.
    /// let scores = stream.alloc_zeros::<f32>(64 * 262_144)?;
    /// let lengths = stream.clone_htod(&vec![262_144i32; 64])?;
    /// let live_rows = stream.clone_htod(&[64i32])?;
    /// let mut out = stream.alloc_zeros::<i32>(64 * 2048)?;
    /// let io = RawBuffers {
    ///     scores: scores.device_ptr(stream).0,
    ///     lengths: lengths.device_ptr(stream).0,
    ///     live_rows: live_rows.device_ptr(stream).0,
    ///     out: out.device_ptr_mut(stream).0,
    ///     row_info: 0,
    /// };
    /// // SAFETY: the buffers hold the plan's extents and outlive the launch.
    /// unsafe { plan.launch_raw(stream, io, &mut ws)? };
    /// # Ok(())
    /// # }
    /// ```
    pub unsafe fn launch_raw(
        &self,
        stream: &Arc<CudaStream>,
        io: RawBuffers,
        ws: &mut Workspace,
    ) -> Result<()> {
        let call = super::call::CallShape::of_plan(self);
        // SAFETY: forwarded from the caller; `call` is the plan's own extents.
        unsafe { self.launch_call(stream, call, io, ws) }
    }
}

/// Events that join the selector's stream to a caller's stream (fork and join), created ahead
/// of time so that launching allocates nothing, inside graph capture too.
pub struct StreamJoin {
    fork: cudarc::driver::CudaEvent,
    join: cudarc::driver::CudaEvent,
}

impl StreamJoin {
    /// The fork and join events, made in `stream`'s context.
    ///
    /// # Errors
    /// [`Error::Cuda`] when an event cannot be created.
    pub fn new(stream: &Arc<CudaStream>) -> Result<StreamJoin> {
        let ctx = stream.context();
        let make = || {
            ctx.new_event(None)
                .map_err(Error::driver("creating an event"))
        };
        Ok(StreamJoin {
            fork: make()?,
            join: make()?,
        })
    }
}

impl Plan {
    /// Launches on raw device pointers with the work ordered on a caller's `CUstream` (a
    /// PyTorch or candle stream, say): the selector's stream waits for `caller`, runs, and
    /// `caller` waits for it. Capturing `caller` into a graph captures the launch as well
    /// (the event fork/join is the graph-capture idiom for a second stream).
    ///
    /// # Safety
    /// As [`Plan::launch_raw`]; `caller` must be a live stream of the same context.
    pub unsafe fn launch_on_stream(
        &self,
        stream: &Arc<CudaStream>,
        caller: cudarc::driver::sys::CUstream,
        join: &StreamJoin,
        io: RawBuffers,
        ws: &mut Workspace,
    ) -> Result<()> {
        use cudarc::driver::result::{event, stream as cu_stream};
        let err = |what: &str, e: cudarc::driver::DriverError| Error::driver(what)(e);
        let flags = cudarc::driver::sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT;
        // SAFETY: both events and streams are live in this context; the caller vouches for
        // `caller` and the pointers.
        unsafe {
            event::record(join.fork.cu_event(), caller)
                .map_err(|e| err("recording the fork event", e))?;
            cu_stream::wait_event(stream.cu_stream(), join.fork.cu_event(), flags)
                .map_err(|e| err("waiting for the caller's stream", e))?;
            self.launch_raw(stream, io, ws)?;
            event::record(join.join.cu_event(), stream.cu_stream())
                .map_err(|e| err("recording the join event", e))?;
            cu_stream::wait_event(caller, join.join.cu_event(), flags)
                .map_err(|e| err("joining the caller's stream", e))
        }
    }
}

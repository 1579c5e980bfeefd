//! One call served by a plan of larger capacity: a cached plan (bindings that plan once per
//! shape class, such as the Python package) runs calls of fewer rows, narrower rows and other
//! pitches than it was planned for.
//!
//! What a plan fixes from its capacities is safe for any smaller call: the grid and the spill
//! capacity (sized from `M_cap` and the width) only bound work and workspace, and the kernels
//! take the row count, width and pitches as arguments. The row capacity and width passed to the
//! kernels are the call's, so a live row count or a length beyond the call's buffers is
//! clamped and reported exactly as for a plan of that size. A `map=staged` plan lays its
//! workspace out from the row capacity it is given, so a smaller call uses a smaller layout in
//! the same buffer and copies its status words to where [`Workspace::status`] reads them.

use super::entry_args::{CallArgs, SelectorArgs, SelectorHead, SelectorTail};
use super::launch::{CallBuffers, RawBuffers, Workspace};
use super::plan::{Plan, StagedLayout};
use crate::{Error, Result};
use cudarc::driver::{CudaStream, DevicePtrMut};
use std::sync::Arc;

/// The extents of one call: `rows` rows (the call's `M_cap`: the live row count is clamped to
/// it) of `width` scores at row pitch `pitch`, output rows at `out_pitch`. Each must be within
/// the plan's request ([`Plan::check_call`]); the pitches may be anything from the width and K
/// up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallShape {
    /// Rows of the call.
    pub rows: u32,
    /// Allocated row width.
    pub width: u32,
    /// Row pitch of the scores, in elements.
    pub pitch: u64,
    /// Row pitch of the output, in elements.
    pub out_pitch: u64,
}

impl CallShape {
    /// The plan's own capacities, the shape [`Plan::launch_raw`] launches.
    pub fn of_plan(plan: &Plan) -> CallShape {
        let r = &plan.request;
        CallShape {
            rows: r.m_cap,
            width: r.width,
            pitch: r.pitch,
            out_pitch: r.out_pitch,
        }
    }
}

impl Plan {
    /// Checks that `call` fits this plan: `1 <= rows <= M_cap`, `width <= N`, the pitches at
    /// least the width and K. The message says which capacity to raise.
    pub fn check_call(&self, call: &CallShape) -> Result<()> {
        let r = &self.request;
        let problem = if call.rows == 0 {
            Some("a call needs at least one row".to_string())
        } else if call.rows > r.m_cap {
            Some(format!(
                "{} rows exceed the plan's capacity of {} rows: plan for more rows",
                call.rows, r.m_cap
            ))
        } else if call.width > r.width || call.width == 0 {
            Some(format!(
                "width {} is outside the plan's 1..={}: plan for wider rows",
                call.width, r.width
            ))
        } else if call.pitch < call.width as u64 {
            Some(format!(
                "row pitch {} is smaller than the width {}",
                call.pitch, call.width
            ))
        } else if call.out_pitch < r.k as u64 {
            Some(format!(
                "output pitch {} is smaller than K = {}",
                call.out_pitch, r.k
            ))
        } else {
            None
        };
        match problem {
            Some(why) => Err(Error::Input(why)),
            None => Ok(()),
        }
    }

    /// Launches one call of shape `call` (checked with [`Plan::check_call`]) on raw device
    /// pointers on `stream`, which may wrap a stream owned elsewhere
    /// (`CudaContext::wrap_borrowed_stream`): no fork, no join, no allocation, no read-back, so
    /// it is graph-capturable like [`Plan::launch_raw`].
    ///
    /// # Safety
    /// `io.scores` must point to `(rows - 1) * pitch + width` readable scores of the spec's dtype, `io.lengths` to
    /// `rows` i32, `io.live_rows` to one i32, `io.out` to `(rows - 1) * out_pitch + K` writable
    /// i32 and `io.row_info`, when non-zero, to `2 * rows` writable i32 (the extents of `call`),
    /// all in this plan's context and not written by other work while the kernels run; `ws`
    /// must not be in use by work on another stream at the same time.
    pub unsafe fn launch_call(
        &self,
        stream: &Arc<CudaStream>,
        call: CallShape,
        io: RawBuffers,
        ws: &mut Workspace,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_call_with(stream, call, io, &CallBuffers::PLAIN, ws) }
    }

    /// [`Plan::launch_call`] for a plan whose spec has a call interface beyond the plain
    /// operator (`docs/interface.md`): `buffers` carries its row source, transform and values
    /// output, of the kinds the spec names (else an error before anything is launched).
    ///
    /// # Safety
    /// As [`Plan::launch_call`], and: a window's `starts` and `ends` must point to `rows` i32,
    /// decode `seq_lens` to `rows / next_n` (rounded up) i32, `offsets` to `rows` i32, a page
    /// table to `(rows - 1) * pitch + columns` i32 (`columns` when the pitch is 0), and
    /// `values` to `(rows - 1) * out_pitch + K` writable elements of the spec's dtype.
    pub unsafe fn launch_call_with(
        &self,
        stream: &Arc<CudaStream>,
        call: CallShape,
        io: RawBuffers,
        buffers: &CallBuffers,
        ws: &mut Workspace,
    ) -> Result<()> {
        self.check_call(&call)?;
        self.check_workspace(ws)?;
        let args = buffers.args(&self.spec, io.lengths)?;
        if let Some(stages) = &self.stages {
            // SAFETY: forwarded from the caller.
            return unsafe { self.launch_call_stages(stages, stream, call, io, args, ws) };
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_kernel(stream, call, io, args, ws) }
    }

    /// The single kernel of a non-staged plan for `call` (checked by the caller).
    ///
    /// # Safety
    /// As [`Plan::launch_call`].
    unsafe fn launch_kernel(
        &self,
        stream: &Arc<CudaStream>,
        call: CallShape,
        io: RawBuffers,
        call_args: CallArgs,
        ws: &mut Workspace,
    ) -> Result<()> {
        let (spill, _sp) = ws.spill.device_ptr_mut(stream);
        let (control, _c) = ws.control.device_ptr_mut(stream);
        let args = SelectorArgs {
            head: SelectorHead {
                scores: io.scores,
                pitch: call.pitch as i64,
            },
            call: call_args,
            tail: SelectorTail {
                live_rows: io.live_rows,
                m_cap: call.rows as i32,
                width: call.width as i32,
                out: io.out,
                out_pitch: call.out_pitch as i64,
                spill,
                spill_cap: self.spill_cap as i32,
                control,
                row_info: io.row_info,
            },
        };
        // SAFETY: the caller vouches for the pointers; the workspace is this plan's.
        unsafe { args.launch(stream, &self.loaded.func, self.launch_config()) }
            .map_err(Error::driver(&format!("launching `{}`", self.kernel.entry)))
    }

    /// The stage chain for `call`: the workspace laid out for `call.rows`, its cleared part
    /// zeroed first, its status words copied to the plan's status words at the end.
    ///
    /// # Safety
    /// As [`Plan::launch_call`].
    unsafe fn launch_call_stages(
        &self,
        stages: &StagedLayout,
        stream: &Arc<CudaStream>,
        call: CallShape,
        io: RawBuffers,
        call_args: CallArgs,
        ws: &mut Workspace,
    ) -> Result<()> {
        use super::sharded::stages::{steps, RankPlace, Regions, StageLaunch, Step};
        let regions = if call.rows == self.request.m_cap {
            stages.regions.clone()
        } else {
            Regions::new(&self.spec, call.rows as usize, 1)
        };
        {
            let mut zero = ws.control.slice_mut(regions.zeroed());
            stream
                .memset_zeros(&mut zero)
                .map_err(Error::driver("clearing the staged workspace"))?;
        }
        let rank_io = super::sharded::RankIo {
            scores: io.scores,
            pitch: call.pitch,
            lengths: io.lengths,
            live_rows: io.live_rows,
            out: io.out,
            out_pitch: call.out_pitch,
            row_info: io.row_info,
        };
        let place = RankPlace {
            width: call.width,
            offset: 0,
            total_width: call.width,
            rank: 0,
            ranks: 1,
        };
        let launch = StageLaunch {
            func: &self.loaded.func,
            threads: self.block,
            smem: self.smem,
            m_cap: call.rows,
            chunk_len: stages.chunk_len,
        };
        // The plan's chunks cover its width, hence the call's narrower rows too.
        let chain = if call.rows == self.request.m_cap {
            stages.steps.clone()
        } else {
            steps(&regions, stages.chunks, call.rows, &self.spec, self.block)
        };
        let (words, _w) = ws.control.device_ptr_mut(stream);
        for step in &chain {
            if let &Step::Stage { stage, digit, grid } = step {
                // SAFETY: the caller vouches for `io`; `words` is this plan's staged workspace,
                // which holds the layout of any row count up to M_cap.
                unsafe {
                    launch.launch(
                        stream,
                        (stage, digit, grid),
                        place,
                        &rank_io,
                        &call_args,
                        words,
                    )?
                };
            }
        }
        let (from, to) = (regions.status.clone(), stages.regions.status.clone());
        if from != to {
            let bytes = (from.end - from.start) * 4;
            // SAFETY: both ranges lie inside `words`, are disjoint (the call's layout is smaller
            // and the status words follow every per-row region), and the copy is ordered on
            // `stream` after the stages.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    words + to.start as u64 * 4,
                    words + from.start as u64 * 4,
                    bytes,
                    stream.cu_stream(),
                )
            }
            .map_err(Error::driver("copying the staged status words"))?;
        }
        Ok(())
    }
}

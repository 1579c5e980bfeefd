//! The all-reduce between the stages of the context-parallel selector: NCCL across devices, or
//! an element-wise sum on one device when the ranks are simulated there (tests, and engines
//! that shard a row inside one device).

use crate::cuda::entry_args::SumArgs;
use crate::{Error, Result};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig};
use cudarc::nccl::safe::{group_end, group_start, Comm, ReduceOp};
use std::ops::Range;
use std::sync::Arc;

/// One rank's stream and workspace; collectives act on a word range of every rank's workspace.
pub(crate) struct RankWorkspace {
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) words: CudaSlice<u32>,
}

/// Sums `range` of every rank's workspace, leaving the sum in every rank's copy, ordered on
/// each rank's stream (graph-capturable: no allocation, no synchronization).
pub(crate) trait Collective: Send {
    fn name(&self) -> &'static str;
    fn all_reduce_sum(&self, ranks: &mut [RankWorkspace], range: Range<usize>) -> Result<()>;
}

/// Ranks simulated on one device, all on one stream: rank 0 accumulates, then every other rank
/// receives a copy.
pub(crate) struct SimulatedCollective {
    pub(crate) sum: CudaFunction,
}

impl Collective for SimulatedCollective {
    fn name(&self) -> &'static str {
        "simulated (one device)"
    }

    fn all_reduce_sum(&self, ranks: &mut [RankWorkspace], range: Range<usize>) -> Result<()> {
        let (first, rest) = ranks
            .split_first_mut()
            .ok_or_else(|| Error::Input("an all-reduce needs at least one rank".into()))?;
        let n = range.len() as i64;
        let stream = first.stream.clone();
        let cfg = LaunchConfig {
            grid_dim: (((range.len() as u32).div_ceil(256)).clamp(1, 1024), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        for other in rest.iter() {
            let mut dst = first.words.slice_mut(range.clone());
            let src = other.words.slice(range.clone());
            // The guards order the views' other uses around the launch, as a pushed view would.
            let (dst, _d) = dst.device_ptr_mut(&stream);
            let (src, _s) = src.device_ptr(&stream);
            // SAFETY: both views hold n words of this stream's context.
            unsafe { SumArgs { dst, src, n }.launch(&stream, &self.sum, cfg) }
                .map_err(Error::driver("simulated all-reduce"))?;
        }
        let sum = first.words.slice(range.clone());
        for other in rest.iter_mut() {
            let mut dst = other.words.slice_mut(range.clone());
            stream
                .memcpy_dtod(&sum, &mut dst)
                .map_err(Error::driver("simulated all-reduce copy"))?;
        }
        Ok(())
    }
}

/// One rank per device over NCCL (one process, `ncclCommInitAll`); the calls of all ranks go
/// in one NCCL group, so one host thread drives every device.
pub(crate) struct NcclCollective {
    comms: Vec<Comm>,
}

// SAFETY: a communicator is used from one host thread at a time (the selector's `&mut self`
// launches); NCCL communicators may move between threads.
unsafe impl Send for NcclCollective {}

impl NcclCollective {
    /// Communicators over `streams`, one per device, rank i on `streams[i]`.
    pub(crate) fn new(streams: &[Arc<CudaStream>]) -> Result<NcclCollective> {
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { cudarc::nccl::sys::is_culib_present() } {
            return Err(Error::Cuda(
                "libnccl was not found: install NCCL 2.28+ (e.g. `pip install nvidia-nccl-cu13` and \
                 add its lib folder to LD_LIBRARY_PATH) or simulate the ranks on one device"
                    .into(),
            ));
        }
        let comms = Comm::from_devices(streams.to_vec())
            .map_err(|e| Error::Cuda(format!("creating NCCL communicators: {e:?}")))?;
        Ok(NcclCollective { comms })
    }
}

impl Collective for NcclCollective {
    fn name(&self) -> &'static str {
        "NCCL"
    }

    fn all_reduce_sum(&self, ranks: &mut [RankWorkspace], range: Range<usize>) -> Result<()> {
        if ranks.len() != self.comms.len() {
            return Err(Error::Input(format!(
                "{} rank workspaces for {} NCCL ranks",
                ranks.len(),
                self.comms.len()
            )));
        }
        let nccl = |e| {
            Error::Cuda(format!(
                "NCCL all-reduce: {e:?}; the communicators may hold partial work, drop this \
                 selector and plan a new one"
            ))
        };
        group_start().map_err(nccl)?;
        let mut result = Ok(());
        for (comm, rank) in self.comms.iter().zip(ranks.iter_mut()) {
            let mut view = rank.words.slice_mut(range.clone());
            if let Err(e) = comm.all_reduce_in_place(&mut view, &ReduceOp::Sum) {
                result = Err(nccl(e));
                break;
            }
        }
        // The group is closed whatever happened inside it. An enqueue fails only on arguments
        // (every rank passes the same range of a workspace of the same size), and then the
        // ranks already enqueued wait for the others: the error says to drop the selector.
        group_end().map_err(nccl)?;
        result.map(|_| ())
    }
}

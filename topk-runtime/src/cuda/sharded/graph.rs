//! One context-parallel call captured as CUDA graphs, one per rank stream, NCCL calls included.

use super::{RankIo, ShardedSelector};
use crate::{Error, Result};
use cudarc::driver::{sys, CudaGraph, CudaStream};
use std::sync::Arc;

/// The captured graphs of one call; replaying reruns the call on whatever the captured
/// pointers then hold (lengths and live rows included).
pub struct ShardedGraph {
    graphs: Vec<(Arc<CudaStream>, CudaGraph)>,
}

impl ShardedGraph {
    /// Launches every rank's graph (asynchronous).
    pub fn replay(&self) -> Result<()> {
        for (_, g) in &self.graphs {
            g.launch()
                .map_err(Error::driver("replaying a sharded graph"))?;
        }
        Ok(())
    }

    /// Waits for every rank's stream.
    pub fn synchronize(&self) -> Result<()> {
        for (s, _) in &self.graphs {
            s.synchronize()
                .map_err(Error::driver("waiting for a rank"))?;
        }
        Ok(())
    }
}

impl ShardedSelector {
    /// Captures one call on `io` (see [`ShardedSelector::launch_raw`]) into a graph per rank
    /// stream (simulated ranks share one).
    ///
    /// # Safety
    /// As [`ShardedSelector::launch_raw`], for as long as the graph is replayed; and the
    /// selector itself must outlive every replay (the graph runs on its workspaces and
    /// communicators).
    pub unsafe fn capture(&mut self, io: &[RankIo]) -> Result<ShardedGraph> {
        let mut streams: Vec<Arc<CudaStream>> = Vec::new();
        for rank in &self.ranks {
            if !streams.iter().any(|s| Arc::ptr_eq(s, &rank.stream)) {
                streams.push(rank.stream.clone());
            }
        }
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        for (i, s) in streams.iter().enumerate() {
            if let Err(e) = s.begin_capture(mode) {
                // Leave no stream capturing behind.
                for started in &streams[..i] {
                    let _ = started.end_capture(sys::CUgraphInstantiate_flags(0));
                }
                return Err(Error::driver("beginning graph capture")(e));
            }
        }
        // SAFETY: forwarded to the caller.
        let launched = unsafe { self.launch_raw(io) };
        let mut graphs = Vec::with_capacity(streams.len());
        let mut ended = Ok(());
        for s in streams {
            match s.end_capture(sys::CUgraphInstantiate_flags(0)) {
                Ok(Some(g)) => graphs.push((s, g)),
                Ok(None) => ended = Err(Error::Cuda("graph capture recorded nothing".into())),
                Err(e) => ended = Err(Error::driver("ending graph capture")(e)),
            }
        }
        launched?;
        ended?;
        Ok(ShardedGraph { graphs })
    }
}

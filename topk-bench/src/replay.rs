//! Timing captured CUDA graphs: the mean time of one replay over a round of replays, between two
//! events on the stream (what the GPU programs `interface-cost` and `prior-trace` report).

use std::sync::Arc;
use topk_runtime::cuda::cudarc::driver::{sys, CudaEvent, CudaGraph, CudaStream, DriverError};
use topk_runtime::{Error, Result};

fn cuda(what: &str) -> impl Fn(DriverError) -> Error + '_ {
    move |e| Error::Cuda(format!("{what}: {e}"))
}

/// Times rounds of graph replays on one stream.
pub struct ReplayTimer {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    stop: CudaEvent,
    replays: usize,
}

impl ReplayTimer {
    /// A timer of `replays` (at least one) replays per round on `stream`.
    pub fn new(stream: &Arc<CudaStream>, replays: usize) -> Result<ReplayTimer> {
        let ctx = stream.context();
        let event = || {
            ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda("creating an event"))
        };
        Ok(ReplayTimer {
            stream: stream.clone(),
            start: event()?,
            stop: event()?,
            replays: replays.max(1),
        })
    }

    /// One round of `graph`'s replays: the mean time of a replay, in milliseconds.
    pub fn time(&self, graph: &CudaGraph) -> Result<f64> {
        self.start
            .record(&self.stream)
            .map_err(cuda("recording an event"))?;
        for _ in 0..self.replays {
            graph.launch().map_err(cuda("replaying a graph"))?;
        }
        self.stop
            .record(&self.stream)
            .map_err(cuda("recording an event"))?;
        self.stop
            .synchronize()
            .map_err(cuda("waiting for the replays"))?;
        let ms = self
            .start
            .elapsed_ms(&self.stop)
            .map_err(cuda("reading event time"))?;
        Ok(ms as f64 / self.replays as f64)
    }

    /// Rounds of every graph, the order rotating by round so that drift spreads over all of
    /// them: `times[g]` holds graph `g`'s mean replay time of each round. Each graph is replayed
    /// `warmup` times first.
    pub fn rotating(
        &self,
        graphs: &[&CudaGraph],
        rounds: usize,
        warmup: usize,
    ) -> Result<Vec<Vec<f64>>> {
        for _ in 0..warmup {
            for g in graphs {
                g.launch().map_err(cuda("replaying a graph"))?;
            }
        }
        let mut times = vec![Vec::new(); graphs.len()];
        for round in 0..rounds.max(1) {
            for j in 0..graphs.len() {
                let g = (round + j) % graphs.len();
                times[g].push(self.time(graphs[g])?);
            }
        }
        Ok(times)
    }
}

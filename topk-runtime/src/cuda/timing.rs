//! Timing the way the paper does (§6.1): a CUDA graph of the call, warm-up, then the median over
//! rounds of replays, measured with CUDA events.

use crate::{Error, Result};
use cudarc::driver::{sys, CudaStream};
use std::sync::Arc;

/// Replay timing of one captured call.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphTiming {
    /// Median over rounds of the mean time per replay, milliseconds.
    pub median_ms: f64,
    /// Fastest round's mean time per replay, milliseconds.
    pub min_ms: f64,
    /// Slowest round's mean time per replay, milliseconds.
    pub max_ms: f64,
    /// Rounds timed.
    pub rounds: usize,
    /// Replays per round.
    pub replays_per_round: usize,
}

/// How a captured call is timed; the default is the harness's: 10 warm-up replays, then 7
/// rounds of 20.
#[derive(Clone, Copy, Debug)]
pub struct TimingProtocol {
    /// Untimed replays first.
    pub warmup: usize,
    /// Timed rounds (at least 1).
    pub rounds: usize,
    /// Replays per round, timed together (at least 1).
    pub replays_per_round: usize,
}

impl Default for TimingProtocol {
    fn default() -> Self {
        TimingProtocol {
            warmup: 10,
            rounds: 7,
            replays_per_round: 20,
        }
    }
}

fn cuda(what: &str) -> impl FnOnce(cudarc::driver::DriverError) -> Error + use<> {
    Error::driver(what)
}

/// Captures `call` (which must only enqueue work on `stream`) into a graph and times replays.
///
/// # Errors
/// The error of `call`, or [`Error::Cuda`] when capture, replay or the events fail.
pub fn time_graph(
    stream: &Arc<CudaStream>,
    protocol: TimingProtocol,
    mut call: impl FnMut() -> Result<()>,
) -> Result<GraphTiming> {
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(cuda("beginning graph capture"))?;
    let captured = call();
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .map_err(cuda("ending graph capture"))?;
    captured?;
    let graph = graph.ok_or_else(|| Error::Cuda("graph capture recorded nothing".into()))?;
    let ctx = stream.context();
    let start = ctx
        .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(cuda("creating an event"))?;
    let stop = ctx
        .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(cuda("creating an event"))?;
    for _ in 0..protocol.warmup {
        graph.launch().map_err(cuda("replaying the graph"))?;
    }
    let mut per_round = Vec::with_capacity(protocol.rounds);
    for _ in 0..protocol.rounds.max(1) {
        start.record(stream).map_err(cuda("recording an event"))?;
        for _ in 0..protocol.replays_per_round.max(1) {
            graph.launch().map_err(cuda("replaying the graph"))?;
        }
        stop.record(stream).map_err(cuda("recording an event"))?;
        stop.synchronize()
            .map_err(cuda("waiting for the replays"))?;
        let ms = start
            .elapsed_ms(&stop)
            .map_err(cuda("reading event time"))? as f64;
        per_round.push(ms / protocol.replays_per_round.max(1) as f64);
    }
    per_round.sort_by(|a, b| a.total_cmp(b));
    Ok(GraphTiming {
        median_ms: per_round[per_round.len() / 2],
        min_ms: per_round[0],
        max_ms: *per_round.last().unwrap(),
        rounds: per_round.len(),
        replays_per_round: protocol.replays_per_round.max(1),
    })
}

//! Phase-timing builds of the persistent and cluster kernels, for finding where a row's time goes.
//!
//! [`generate_probed`] generates the ordinary source with `PHASE_PROBE` defined, which turns on
//! the hooks of `cuda/probe.cu` at fixed points of `select_row` (and of
//! the cluster kernel's row loop, on rank 0): reads of the `%globaltimer`
//! nanosecond clock by thread 0 at the row's start, proposal done, certification done (the
//! frontier is formed), refinement done. The three durations are packed into the row's |Q0|
//! word of the route info (which then no longer counts candidates):
//! bits 0-9 the proposal and bits 10-19 the refinement in units of [`PHASE_UNIT_NS`] ns,
//! bits 20-31 the certification passes in units of [`PASS_UNIT_NS`] ns, each saturating.
//! The row's route word carries, above the route (bits 0-2), the worker CTA that ran it (bits
//! 3-12) and the row's start (bits 13-31: the clock in units of [`START_UNIT_NS`] ns, wrapping
//! every 134 ms; [`RowStamp`] decodes it and [`start_offsets_us`] unwraps a launch's starts), so
//! that a launch's rows can be laid out in time per worker.
//! Without the define the hooks are empty, so the kernels the GPU tests check and the benchmarks
//! time are never the instrumented ones.

#[cfg(doc)]
use crate::generate;
use crate::{CodegenError, Family, KernelSource};
use topk_dsl::Spec;

/// Unit of the proposal and refinement fields, ns (10 bits: up to 131 us).
pub const PHASE_UNIT_NS: u64 = 128;
/// Unit of the certification field, ns (12 bits: up to 2.1 ms).
pub const PASS_UNIT_NS: u64 = 512;

/// Unit of a row's start stamp, ns (19 bits: the clock wraps every 134 ms).
pub const START_UNIT_NS: u64 = 256;
const START_BITS: u32 = 19;

/// Who ran a row and when it started, decoded from a probed build's route word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowStamp {
    /// The route code (`topk_runtime::Route`), as in an ordinary build's word.
    pub route: u8,
    /// The worker CTA (block index modulo 1024).
    pub worker: u32,
    /// The row's start on the device clock, in [`START_UNIT_NS`] units modulo 2^19.
    pub start: u32,
}

impl RowStamp {
    pub fn decode(word: i32) -> RowStamp {
        let w = word as u32;
        RowStamp {
            route: (w & 7) as u8,
            worker: (w >> 3) & 1023,
            start: w >> 13,
        }
    }
}

/// The rows' starts in microseconds after the earliest of them, from stamps of one launch
/// (which must span less than half the clock's 134 ms wrap).
pub fn start_offsets_us(stamps: &[RowStamp]) -> Vec<f64> {
    let wrap = 1u32 << START_BITS;
    let (lo, hi) = stamps.iter().fold((u32::MAX, 0), |(lo, hi), s| {
        (lo.min(s.start), hi.max(s.start))
    });
    // A launch that crossed the wrap has stamps near both ends: move the small ones up.
    let unwrapped: Vec<u64> = stamps
        .iter()
        .map(|s| {
            let crossed = hi - lo > wrap / 2 && s.start < wrap / 2;
            u64::from(s.start) + if crossed { u64::from(wrap) } else { 0 }
        })
        .collect();
    let first = unwrapped.iter().copied().min().unwrap_or(0);
    unwrapped
        .iter()
        .map(|&t| (t - first) as f64 * START_UNIT_NS as f64 / 1e3)
        .collect()
}

/// Where a row's time went, decoded from a probed build's |Q0| word, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseTimes {
    pub proposal_us: f64,
    pub pass_us: f64,
    pub refine_us: f64,
}

impl PhaseTimes {
    pub fn decode(word: i32) -> PhaseTimes {
        let w = word as u32;
        let us = |units: u32, unit_ns: u64| units as f64 * unit_ns as f64 / 1e3;
        PhaseTimes {
            proposal_us: us(w & 1023, PHASE_UNIT_NS),
            refine_us: us((w >> 10) & 1023, PHASE_UNIT_NS),
            pass_us: us(w >> 20, PASS_UNIT_NS),
        }
    }
}

/// The prelude's part of a probed build: `PHASE_PROBE` turns on the hooks of `cuda/probe.cu`
/// (called from `select_row` and the cluster kernel), with the units above.
fn defines() -> String {
    format!(
        "\n// Phase probe build: route info carries phase times (topk_codegen::probe).\n\
         #define PHASE_PROBE 1\n\
         #define PROBE_PHASE_UNIT_NS {PHASE_UNIT_NS}ull\n\
         #define PROBE_PASS_UNIT_NS {PASS_UNIT_NS}ull\n\
         #define PROBE_START_UNIT_NS {START_UNIT_NS}ull\n"
    )
}

/// The persistent or cluster kernel of `spec` with phase timers (see the module docs). Its entry point is
/// that of [`generate`]; its source (and so its compiled binary) differs.
pub fn generate_probed(spec: &Spec) -> Result<KernelSource, CodegenError> {
    if !matches!(
        Family::of(spec),
        Family::Persistent | Family::Cluster { .. }
    ) {
        return Err(CodegenError::Unsupported(format!(
            "{spec}: phase timers exist for the persistent and cluster kernels only"
        )));
    }
    crate::generate_with(spec, &defines())
}

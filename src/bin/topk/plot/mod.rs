//! SVG charts of merged benchmark results (`bench/peers/merge_results.py`): latency against
//! rows per call, speedup and floor ratios per shape, and whole-trace totals. Each chart is
//! drawn into a string; the caller decides where it goes.

mod canvas;
mod latency;
mod ratios;
mod results;
mod traces;

pub use latency::latency;
pub use ratios::{floor, speedup};
pub use results::Merged;
pub use traces::traces;

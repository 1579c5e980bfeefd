//! SVG charts of merged benchmark results (`bench/peers/merge_results.py`): latency against
//! rows per call, speedup and floor ratios per shape, and whole-trace totals; and of the GPU
//! bench logs next to them: ablations, retention margins, KV-split variants and
//! context-parallel scaling. Each chart is drawn into a string; the caller decides where it
//! goes.

mod ablations;
mod canvas;
mod context_parallel;
mod floor_bars;
mod jsonl;
mod latency;
mod line_chart;
mod ratios;
mod results;
mod traces;
mod variants;

pub use ablations::{ablation_latency, crossover, ABLATIONS};
pub use context_parallel::{context_parallel, CONTEXT_PARALLEL};
pub use jsonl::{read, read_optional, Measurement, Source};
pub use latency::latency;
pub use ratios::{floor, speedup};
pub use results::Merged;
pub use traces::traces;
pub use variants::{kvsplit, margins, views, KVSPLIT, MARGINS, VIEWS};

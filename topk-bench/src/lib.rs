//! The benchmark harness of the topk selector, beside the product: the GPU benchmark driver
//! (plan, time as CUDA graph replays, verify on the device, report against the one-read floor),
//! the phase-probe timelines, profile statistics, a row's prior on a decode trace, and the `topk-bench`, `operator-matrix`,
//! `context-parallel` and `interface-cost` programs behind bench/RESULTS.md.

pub mod interface_cost;
pub mod matrix_bench;
pub mod phases;
pub mod prior_trace;
pub mod profile_stats;
pub mod replay;
pub mod shapes;

pub use matrix_bench::{bench_matrix, bench_matrix_with, BenchReport, FLOOR_READ_BYTES_PER_S};
pub use phases::{PhaseSummary, RowTimeline, Spread};

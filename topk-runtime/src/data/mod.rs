//! Generated score matrices (DESIGN §6): one counter-based formula evaluated here and, with
//! identical FP32 bits, on the device by the CUDA source of
//! [`topk_codegen::generator::generator_source`]. Every value is a function of
//! `(seed, global row, column, valid length, K)` alone, so matrices generated in pieces, on
//! either side, with any launch shape, are the same matrix.
//!
//! - [`Profile`]: `indexer` (sink + recency structure, paper §3.1 Fig. 3c), `iid`, and the
//!   adversarial families;
//! - [`shapes`]: terminal causal windows, the operator matrix (§6.2), framework traces (§6.3);
//! - [`route_rates`]: what a proposal policy does on a profile (routes, |Q0|, view underfill);
//! - [`DecodeTrace`]: consecutive decode steps of a batch of growing sequences with drifting
//!   queries (for a row's prior boundary; host-side only).

mod counter;
mod decode_trace;
mod formula;
mod generate;
mod profile;
pub mod route_rates;
pub mod shapes;

pub use decode_trace::{DecodeTrace, TraceStep};
pub use formula::value;
pub use generate::{generate, generate_into};
pub use profile::Profile;

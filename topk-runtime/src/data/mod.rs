//! Generated score matrices (DESIGN §6): one counter-based formula evaluated here and, with
//! identical FP32 bits, on the device by the CUDA source of
//! [`topk_codegen::generator::generator_source`]. Every value is a function of
//! `(seed, global row, column, valid length, K)` alone, so matrices generated in pieces, on
//! either side, with any launch shape, are the same matrix.
//!
//! - [`Profile`]: `indexer` (sink + recency structure, paper §3.1 Fig. 3c), `iid`, and the
//!   adversarial families;
//! - [`shapes`]: terminal causal windows, the operator matrix (§6.2), framework traces (§6.3);
//! - [`stats`]: endpoint share and primary-boundary underfill of a profile.

mod counter;
mod formula;
mod generate;
mod profile;
pub mod shapes;
pub mod stats;

pub use formula::value;
pub use generate::{generate, generate_into};
pub use profile::Profile;

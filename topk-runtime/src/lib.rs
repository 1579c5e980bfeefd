//! Runtime of the exact Top-K selectors: the CPU backend (reference and fallback), the oracle
//! and the eq. 30 verifier, data generators, and the CUDA device layer.

pub mod autotune;
pub mod call;
pub mod cpu;
pub mod cuda;
pub mod data;
mod error;
mod input;
pub mod keys;
mod matrix;
pub mod policy;
pub mod routes;
mod score;
pub mod sharding;

pub use error::{Error, Result};
pub use matrix::ScoreMatrix;
pub use routes::{Route, RouteStats};
pub use score::{Score, ScoreRows};

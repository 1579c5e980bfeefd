//! Runtime of the exact Top-K selectors: the CPU backend (reference and fallback), the oracle
//! and the eq. 30 verifier, data generators, and the CUDA layer (planner, graph-capturable
//! launches, autotune).
//!
//! The operator: for every row of a float32 score matrix with its own valid length `L`, the
//! indices of its K largest valid scores (any order), or every valid index then `-1` when
//! `L <= K` (README, "The operator contract").
//!
//! - On the CPU: [`cpu::select`] (and [`cpu::select_with`] for the whole call interface of
//!   [`call`]: score dtypes, row windows, values, sorted output, index transforms), checked
//!   by [`cpu::verify`].
//! - On the GPU: [`cuda::Gpu::open`], [`cuda::Plan::new`] and [`cuda::Plan::launch`], or
//!   [`cuda::CudaSelector`] for scores in host memory. The planner takes the spec an
//!   [`autotune::Store`] recorded for the device and shape, else the default map
//!   [`policy::default_spec`].
//! - Rows sharded over ranks (context parallelism): [`sharding`], [`cpu::sharded`] and
//!   [`cuda::sharded`].
//!
//! ```
//! use topk_dsl::Spec;
//! use topk_runtime::{cpu, ScoreMatrix};
//!
//! # fn main() -> topk_runtime::Result<()> {
//! let scores = [0.1f32, 0.9, 0.4, 0.7, 0.2, /* row 1 */ 5.0, 1.0, 0.0, 0.0, 0.0];
//! let matrix = ScoreMatrix { data: &scores, rows: 2, width: 5, pitch: 5, lengths: &[5, 2] };
//! let mut out = [0i32; 2 * 3];
//! cpu::select(&Spec { k: 3, ..Spec::default() }, &matrix, &mut out, 3, false)?;
//! let mut row0 = out[..3].to_vec();
//! row0.sort();
//! assert_eq!(row0, [1, 2, 3]); // 0.9, 0.4, 0.7
//! assert_eq!(out[5], -1); // row 1 has L = 2 <= K: its 2 indices, then -1
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

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
mod routes;
mod score;
pub mod sharding;

pub use error::{Error, Result};
pub use matrix::ScoreMatrix;
pub use routes::{Route, RouteStats};
pub use score::{Score, ScoreRows};

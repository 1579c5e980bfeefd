//! `topk`: exact sample-guided Top-K for long, ragged score rows.
pub mod backend;
pub mod cli;
pub mod io;
mod kernel_const;
pub mod units;

pub use kernel_const::KernelConst;
pub use topk_codegen as codegen;
pub use topk_dsl as dsl;
pub use topk_dsl::Spec;
pub use topk_dsl_macros::topk_kernel;
pub use topk_runtime as runtime;

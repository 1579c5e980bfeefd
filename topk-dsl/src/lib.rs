//! The declarative description of one exact Top-K selector.
//!
//! A [`Spec`] fixes everything a generated kernel specializes on: the rank `k`, the score dtype,
//! the execution mapping (paper §4.5, §5.5), the boundary proposal (§4.2), the coarse-key width
//! and the FP32 refinement digits (§4.4). Its canonical text form (its `Display` and
//! [`Spec::parse`]) is the one name used by the CLI, cache keys, the autotune database, the macro
//! and snapshot files. This crate knows nothing of CUDA.

mod derived;
mod error;
mod presets;
mod spec;
mod text;
mod validate;

pub use error::SpecError;
pub use presets::{preset, Preset, PRESETS};
pub use spec::{
    Centi, Digits, Dtype, Mapping, Proposal, RowLocalVariant, Spec, MAX_K, TAIL_MAX_WAVES,
};

//! The declarative description of one exact Top-K selector.
//!
//! A [`Spec`] fixes everything a generated kernel specializes on: the rank `k`, the score dtype,
//! the execution mapping (paper §4.5, §5.5), the boundary proposal (§4.2), the coarse-key width,
//! the refinement digits (§4.4) and the call's optional inputs and outputs ([`Io`]: values,
//! sorted output, deterministic ties, row windows, fused index transforms). Its canonical text form (its `Display` and
//! [`Spec::parse`]) is the one name used by the CLI, cache keys, the autotune database, the macro
//! and snapshot files. This crate knows nothing of CUDA.

mod derived;
mod error;
mod io;
mod presets;
mod spec;
mod text;
mod text_io;
mod validate;

pub use error::SpecError;
pub use io::{Io, Order, Prior, Rows, Ties, Transform};
pub use presets::{
    call_interface_samples, preset, prior_samples, sixteen_bit_samples, Preset, PRESETS,
};
pub use spec::{
    Centi, Digits, Dtype, Mapping, Proposal, RowLocalVariant, Spec, MAX_K, TAIL_MAX_WAVES,
};

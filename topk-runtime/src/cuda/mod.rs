//! The CUDA device layer: device discovery, NVRTC compilation to CUBIN, and the kernel caches.
//!
//! Everything here works, or fails with an [`Error`](crate::Error) that says what to install,
//! on machines without a GPU, driver or NVRTC; cudarc is never called before its library has
//! been found.

mod build;
pub mod cache;
pub mod device;
mod entry_args;
mod facts;
pub mod nvrtc;

pub use cache::CacheOutcome;
pub use device::{DeviceProps, Gpu, Loaded};
pub use nvrtc::{Arch, Compiled};
pub mod call;
pub mod launch;
pub mod plan;
pub mod selector;
pub mod sharded;
pub mod timing;
pub mod tune;

pub use call::CallShape;
pub use launch::{LaunchBuffers, RawBuffers, StreamJoin, Workspace};
pub use plan::{Plan, PlanRequest, SpecSource};
pub use selector::CudaSelector;
mod device_matrix;
pub use device_matrix::DeviceMatrix;

/// The cudarc version this runtime is built on, for callers that allocate, copy and capture
/// with it next to the selector.
pub use cudarc;

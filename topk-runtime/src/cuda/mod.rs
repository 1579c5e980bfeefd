//! The CUDA layer: device discovery, NVRTC compilation to CUBIN and the kernel caches, the
//! planner, graph-capturable launches, the host-memory selector, the context-parallel
//! selector, and the timing and autotuning the planner's records come from.
//!
//! Everything here works, or fails with an [`Error`](crate::Error) that says what to install,
//! on machines without a GPU, driver or NVRTC; cudarc is never called before its library has
//! been found.
//!
//! The path of one call: [`Gpu::open`] -> [`Plan::new`] (spec, kernel, geometry, workspace
//! size) -> [`Workspace::new`] -> [`Plan::launch`] (cudarc views) or [`Plan::launch_raw`] (raw
//! device pointers), both graph-capturable; [`CudaSelector`] wraps them for scores in host
//! memory.

mod build;
pub mod cache;
mod call;
mod device;
mod device_matrix;
mod entry_args;
mod facts;
pub mod launch;
pub mod nvrtc;
pub mod plan;
mod refusal;
mod selector;
pub mod sharded;
pub mod timing;
pub mod tune;

pub use cache::CacheOutcome;
pub use call::CallShape;
pub use device::{DeviceProps, Gpu, Loaded};
pub use device_matrix::DeviceMatrix;
pub use launch::{
    CallBuffers, DeviceRows, DeviceTransform, LaunchBuffers, RawBuffers, StreamJoin, Workspace,
};
pub use nvrtc::{Arch, Compiled};
pub use plan::{Plan, PlanRequest, SpecSource};
pub use refusal::{gpu_refusal, held_back_refusal, HeldBack, HELD_BACK};
pub use selector::CudaSelector;

/// The cudarc version this runtime is built on, for callers that allocate, copy and capture
/// with it next to the selector.
pub use cudarc;

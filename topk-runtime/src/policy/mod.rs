//! The default map: which Spec a shape gets without a given spec or an autotune record, as
//! data. An ordered table of rules ([`MAP`]) and the persistent pool's knobs ([`KNOBS`]) and
//! margins ([`MARGINS`]), each with the section of bench/RESULTS.md that measured it, over the
//! shape (K, rows M_cap, width N) and the device's facts ([`DeviceFacts`]). No CUDA here: the
//! planner reads the facts from the device, `topk plan --table` prints the map for any facts,
//! and the CPU backend, the CLI and autotune take their defaults from here.
//!
//! Everything device-dependent in the map comes from the facts, so another GPU gets the
//! equivalent rule: clusters from compute capability 9.0, one wave of 16-CTA clusters
//! (`DeviceFacts::clusters16`), about a wave of 8-CTA ones ([`cluster8_wave_rows`]), a pool of
//! SMs x CTAs per SM ([`DeviceFacts::pool`], from the kernel's `__launch_bounds__` minimum
//! blocks), the stagger only where an SM pairs two CTAs. The planner compiles the spec this
//! gives once; `topk plan --table` shows it over a grid of shapes.

mod facts;
mod persistent;
mod proposal;
mod rules;
mod table;

pub use facts::{DeviceFacts, MeasuredOccupancy};
pub use persistent::*;
pub use proposal::*;
pub use rules::*;
pub use table::{map_table, Grid};

use topk_dsl::{Io, Spec};

/// A shape the default map is asked about: capacities, not live values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Rank K.
    pub k: u32,
    /// Rows the buffers hold (`M_cap`).
    pub m_cap: u32,
    /// Allocated row width `N`.
    pub width: u32,
}

/// The rule of [`MAP`] that takes `shape` on `facts`, and the spec it gives.
pub fn choose(facts: &DeviceFacts, shape: &Shape) -> (&'static Rule, Spec) {
    let rule = MAP
        .iter()
        .find(|rule| (rule.takes)(shape, facts))
        .unwrap_or(&MAP[MAP.len() - 1]);
    (rule, (rule.spec)(shape, facts))
}

/// The default map's spec for `m_cap` rows of `width` scores at rank `k` on a device of
/// `facts`: what the planner compiles when it has no given spec and no autotune record.
///
/// ```
/// use topk_dsl::Mapping;
/// use topk_runtime::policy::{default_spec, DeviceFacts};
///
/// // 4096 rows of 256K on an H200: the persistent kernel, a worker pool over every SM.
/// let spec = default_spec(&DeviceFacts::h200(), 2048, 4096, 262_144);
/// assert_eq!(spec.k, 2048);
/// assert!(matches!(spec.mapping, Mapping::Persistent));
/// assert!(spec.validate().is_ok());
/// println!("{spec}");
/// ```
pub fn default_spec(facts: &DeviceFacts, k: u32, m_cap: u32, width: u32) -> Spec {
    choose(facts, &Shape { k, m_cap, width }).1
}

/// [`default_spec`] for a call of interface `io`: the map's choice with `io`, unless its family
/// does not generate a part of `io` (a row's prior or boundary output on the KV-split or staged
/// kernels, `Spec::gpu_unsupported`), where the persistent pool's spec for the shape takes it.
///
/// ```
/// use topk_dsl::{Io, Mapping, Prior};
/// use topk_runtime::policy::{default_spec, default_spec_for, DeviceFacts};
///
/// // One decode row of 256K keeps its cluster with a prior.
/// let h200 = DeviceFacts::h200();
/// let io = Io { prior: Prior::SUGGESTED, boundary: true, ..Io::DEFAULT };
/// let spec = default_spec_for(&h200, 2048, 1, 262_144, io);
/// assert!(matches!(spec.mapping, Mapping::Cluster { .. }));
/// assert_eq!(spec, topk_dsl::Spec { io, ..default_spec(&h200, 2048, 1, 262_144) });
/// assert!(spec.gpu_unsupported().is_none());
/// ```
pub fn default_spec_for(facts: &DeviceFacts, k: u32, m_cap: u32, width: u32, io: Io) -> Spec {
    let shape = Shape { k, m_cap, width };
    let mut spec = choose(facts, &shape).1;
    spec.io = io;
    if spec.gpu_unsupported().is_some() {
        spec = Spec {
            io,
            ..persistent_default(&shape, facts)
        };
    }
    spec
}

//! What the default map needs to know about a device, as plain data: the planner reads it from
//! the device (`Gpu::facts`); [`DeviceFacts::h200`] serves documentation, tests and callers
//! without a GPU.

use topk_codegen::{Family, Layout};
use topk_dsl::Spec;

/// The device facts the default map is a function of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceFacts {
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Compute capability major version (thread-block clusters from 9.0).
    pub cc_major: u32,
    /// Compute capability minor version.
    pub cc_minor: u32,
    /// Shared memory per SM, bytes.
    pub smem_per_sm: u32,
    /// Shared memory the system reserves per resident CTA, bytes.
    pub smem_reserved_per_cta: u32,
    /// Threads an SM holds at once.
    pub threads_per_sm: u32,
    /// Clusters of 8 CTAs of one CTA per SM (the 1024-thread cluster kernel) resident at once:
    /// the driver's count, which knows how the SMs group into GPCs (0 without clusters).
    pub clusters8: u32,
    /// The same for clusters of 16 CTAs, a non-portable size (0 where the device or driver does
    /// not support it).
    pub clusters16: u32,
    /// What the occupancy calculator reported for a loaded kernel whose CTAs per SM differed
    /// from [`DeviceFacts::ctas_per_sm`]'s estimate; the planner sets it and plans again.
    pub measured: Option<MeasuredOccupancy>,
}

/// CTAs per SM of a loaded kernel, by its block size and dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasuredOccupancy {
    /// Threads per CTA of the kernel.
    pub threads: u32,
    /// Its dynamic shared memory, bytes.
    pub dynamic_smem: u32,
    /// CTAs per SM the occupancy calculator reports for it.
    pub ctas_per_sm: u32,
}

impl DeviceFacts {
    /// The NVIDIA H200 the default map was measured on (bench/RESULTS.md): 132 SMs, compute
    /// capability 9.0, 228 KiB of shared memory per SM, 2048 threads per SM, 15 resident
    /// 8-CTA and 7 resident 16-CTA clusters of 1024-thread CTAs (the driver's counts there).
    pub const fn h200() -> DeviceFacts {
        DeviceFacts {
            sms: 132,
            cc_major: 9,
            cc_minor: 0,
            smem_per_sm: 228 << 10,
            smem_reserved_per_cta: 1 << 10,
            threads_per_sm: 2048,
            clusters8: 15,
            clusters16: 7,
            measured: None,
        }
    }

    /// Whether the default map may use thread-block clusters here: compute capability 9.0 or
    /// newer with 8-CTA clusters resident.
    pub fn has_clusters(&self) -> bool {
        self.cc_major >= 9 && self.clusters8 > 0
    }

    /// CTAs of `spec`'s kernel an SM holds at once: its `__launch_bounds__` minimum blocks
    /// ([`Layout::min_blocks`], which caps the registers so that many fit), fewer where shared
    /// memory or threads run out (static shared memory, a few words, is left out); or what the
    /// occupancy calculator reported for a kernel of its layout ([`DeviceFacts::measured`]).
    pub fn ctas_per_sm(&self, spec: &Spec) -> u32 {
        let family = Family::of(spec);
        let layout = Layout::of(spec, family);
        if let Some(m) = self.measured {
            if (m.threads, m.dynamic_smem) == (layout.threads, layout.dynamic_smem) {
                return m.ctas_per_sm.max(1);
            }
        }
        let by_smem = self.smem_per_sm / (layout.dynamic_smem + self.smem_reserved_per_cta);
        let by_threads = self.threads_per_sm / layout.threads.max(1);
        layout.min_blocks.min(by_smem).min(by_threads).max(1)
    }

    /// Workers of a pool of `spec`'s kernel: one per resident CTA.
    pub fn pool(&self, spec: &Spec) -> u32 {
        self.sms * self.ctas_per_sm(spec)
    }
}

impl std::fmt::Display for DeviceFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} SMs, compute capability {}.{}, {} KiB shared memory and {} threads per SM",
            self.sms,
            self.cc_major,
            self.cc_minor,
            self.smem_per_sm >> 10,
            self.threads_per_sm
        )?;
        if self.has_clusters() {
            write!(
                f,
                ", {} / {} resident 8- / 16-CTA clusters",
                self.clusters8, self.clusters16
            )?;
        } else {
            write!(f, ", no thread-block clusters")?;
        }
        Ok(())
    }
}

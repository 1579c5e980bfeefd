//! Reading a device's [`DeviceFacts`]: attributes from the driver, and the thread-block clusters
//! resident at once from the driver's cluster occupancy calculator, asked of an empty probe
//! kernel (compiled once per device through the caches, never launched) so that the default map
//! can choose the cluster size before its own kernel is compiled.
//!
//! Driver API: <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__OCCUPANCY.html>

use super::device::{Gpu, Loaded};
use crate::policy::DeviceFacts;
use cudarc::driver::sys::{self, CUdevice_attribute};

/// The probe: no body, so its own resources never limit residency; the shared memory asked for
/// at the query does.
const PROBE_ENTRY: &str = "topk_cluster_occupancy_probe";
const PROBE_SOURCE: &str = "extern \"C\" __global__ void topk_cluster_occupancy_probe() {}\n";

/// Threads per CTA of the probe: the 1024-thread cluster kernel's.
const PROBE_THREADS: u32 = 1024;

/// The facts of `gpu`. Attributes the driver does not report take the values of every device
/// of compute capability 8.0-9.0 (2048 threads per SM, 1 KiB reserved per CTA).
pub(super) fn read(gpu: &Gpu) -> DeviceFacts {
    let props = gpu.props();
    let attribute = |attr: CUdevice_attribute, otherwise: u32| {
        gpu.ctx()
            .attribute(attr)
            .map_or(otherwise, |v| v.max(0) as u32)
    };
    let mut facts = DeviceFacts {
        sms: props.sms,
        cc_major: props.cc_major,
        cc_minor: props.cc_minor,
        smem_per_sm: props.smem_per_sm,
        smem_reserved_per_cta: attribute(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
            1024,
        ),
        threads_per_sm: attribute(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            2048,
        ),
        clusters8: 0,
        clusters16: 0,
        measured: None,
    };
    if props.cc_major >= 9 {
        (facts.clusters8, facts.clusters16) = resident_clusters(gpu);
    }
    facts
}

/// Clusters of 8 and of 16 CTAs of one 1024-thread CTA per SM resident at once: the driver's
/// counts, which know how SMs group into GPCs (a cluster runs within one). Where the driver
/// cannot say, SMs / CTAs per cluster; 16-CTA clusters count 0 where the non-portable size is
/// refused.
fn resident_clusters(gpu: &Gpu) -> (u32, u32) {
    let sms = gpu.props().sms;
    // Shared memory for more than half an SM: one probe CTA per SM, as the cluster kernel runs.
    let smem = gpu.props().smem_per_sm / 2 + 1;
    let Ok(probe) = gpu.load(PROBE_SOURCE, PROBE_ENTRY, smem) else {
        return (sms / 8, sms / 16);
    };
    let count = |ctas: u32| max_active_clusters(gpu, &probe, ctas, smem).unwrap_or(sms / ctas);
    let clusters8 = count(8);
    let clusters16 = match gpu.allow_non_portable_clusters(&probe) {
        Ok(()) => count(16),
        Err(_) => 0,
    };
    (clusters8, clusters16)
}

/// `cuOccupancyMaxActiveClusters` for clusters of `ctas` CTAs of `loaded` on
/// [`PROBE_THREADS`] threads with `smem` bytes of dynamic shared memory each, the cluster size
/// given at the query (the probe has no `__cluster_dims__`).
fn max_active_clusters(gpu: &Gpu, loaded: &Loaded, ctas: u32, smem: u32) -> Option<u32> {
    gpu.ctx().bind_to_thread().ok()?;
    // SAFETY: an all-zero launch attribute is a valid value of this plain C struct.
    let mut cluster: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    cluster.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
        x: ctas,
        y: 1,
        z: 1,
    };
    let config = sys::CUlaunchConfig {
        gridDimX: ctas,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: PROBE_THREADS,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: smem,
        hStream: gpu.stream().cu_stream(),
        attrs: &mut cluster,
        numAttrs: 1,
    };
    let mut clusters = 0;
    // SAFETY: the function belongs to a module kept alive by `loaded`, the context is bound,
    // and `config` and the attribute it points to outlive the call, which only reads them.
    unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, loaded.func.cu_function(), &config) }
        .result()
        .ok()?;
    Some(clusters.max(0) as u32)
}

#[cfg(test)]
mod tests {
    use super::{PROBE_ENTRY, PROBE_SOURCE};
    use crate::cuda::nvrtc::{compile, nvrtc_available, Arch};

    #[test]
    fn the_cluster_probe_compiles_for_sm_90a() {
        if let Err(e) = nvrtc_available() {
            eprintln!("skipped the_cluster_probe_compiles_for_sm_90a: {e}");
            return;
        }
        let arch: Arch = "sm_90a".parse().unwrap();
        let compiled = compile(PROBE_SOURCE, PROBE_ENTRY, &arch).unwrap();
        assert!(compiled.cubin.starts_with(b"\x7fELF"));
    }
}

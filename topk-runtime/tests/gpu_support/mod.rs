//! Shared by the GPU test files, whose tests are `#[ignore]`d so that a machine without a GPU
//! reports them as ignored rather than passed; the GPU host runs them with `--ignored`.
#![allow(dead_code)]

use topk_runtime::cuda::Gpu;

/// Device 0; fails the test with the reason when no usable GPU is present (a GPU test that
/// cannot run must not count as passed).
pub fn gpu() -> Gpu {
    if !Gpu::available() {
        panic!(
            "no usable CUDA device (driver, GPU of cc >= 8.0 and NVRTC needed): GPU tests run \
             with `--ignored` on a GPU host only"
        );
    }
    Gpu::open(0).unwrap_or_else(|e| panic!("opening device 0: {e}"))
}

/// Compiles the kernels of `specs` for `arch` through the disk kernel cache (`TOPK_CACHE_DIR`,
/// else the default) on every core, so that the plans a test makes afterwards load them instead
/// of compiling them one after another (NVRTC takes seconds per kernel). Kernels already in the
/// cache are only read. Panics naming a spec that does not generate or compile.
pub fn warm_kernels(arch: topk_runtime::cuda::Arch, specs: &[topk_dsl::Spec]) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use topk_runtime::cuda::cache::{CacheSettings, CompileRequest, DiskCache};
    let settings = CacheSettings::from_env();
    if settings.dir.is_none() || settings.always_compile {
        return; // nothing to fill: the plans compile their kernels themselves
    }
    let disk = DiskCache::new(settings);
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..workers.min(specs.len()) {
            scope.spawn(|| {
                while let Some(spec) = specs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let kernel =
                        topk_codegen::generate(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
                    let request = CompileRequest::new(&kernel.source, &kernel.entry, arch)
                        .unwrap_or_else(|e| panic!("{spec}: {e}"));
                    disk.fetch_or_compile(&request, |r| r.compile())
                        .unwrap_or_else(|e| panic!("{spec}: {e}"));
                }
            });
        }
    });
}

//! Shared by the GPU test files: open device 0, or say why the test is skipped.

use topk_runtime::cuda::Gpu;

/// Device 0, or `None` after printing why `test` skips (no driver, GPU, NVRTC, or too old).
pub fn gpu_or_skip(test: &str) -> Option<Gpu> {
    if !Gpu::available() {
        eprintln!(
            "skipped {test}: no usable CUDA device (driver, GPU of cc >= 8.0 and NVRTC needed)"
        );
        return None;
    }
    match Gpu::open(0) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("skipped {test}: {e}");
            None
        }
    }
}

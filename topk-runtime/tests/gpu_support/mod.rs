//! Shared by the GPU test files, whose tests are `#[ignore]`d so that a machine without a GPU
//! reports them as ignored rather than passed; the GPU host runs them with `--ignored`.

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

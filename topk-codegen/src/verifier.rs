//! CUDA source of the device-side exactness check used by benchmarks.

/// Entry point of the verifier kernel.
pub const VERIFIER_ENTRY: &str = "topk_verify";

/// Self-contained CUDA source of `topk_verify` (one CTA per row; dynamic shared memory of
/// `k_pow2` ints, the next power of two >= K).
pub fn verifier_source() -> &'static str {
    include_str!("cuda/verify.cu")
}

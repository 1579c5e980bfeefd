//! A test kernel over the generated key functions: for every coarse bin, the closed-form
//! endpoint the selectors use (`coarse_endpoint_closed` in `cuda/keys.cu`) and whether it passed
//! its own check, so a GPU test can compare each with the CPU backend's search.

use crate::{generate, CodegenError};
use topk_dsl::Spec;

/// Entry point of [`endpoint_probe_source`]: `(u32* out, int* unchecked)`, one thread per bin;
/// `out[bin]` gets the endpoint's bits and `*unchecked` counts bins that failed the check.
pub const ENDPOINT_PROBE_ENTRY: &str = "topk_endpoint_probe";

const PROBE: &str = r#"
extern "C" __global__ void topk_endpoint_probe(u32* out, int* unchecked) {
  const u32 bin = blockIdx.x * blockDim.x + threadIdx.x;
  if (bin >= (u32)COARSE_BINS) return;
  bool checked;
  out[bin] = __float_as_uint(coarse_endpoint_closed(bin, checked));
  if (!checked) atomicAdd(unchecked, 1);
}
"#;

/// The probe for a `coarse_bits`-bit coarse key: the exact persistent kernel's source (for its
/// key functions and `COARSE_BINS`) followed by [`ENDPOINT_PROBE_ENTRY`].
pub fn endpoint_probe_source(coarse_bits: u8) -> Result<String, CodegenError> {
    let spec = Spec::parse(&format!(
        "k=2048,map=persistent,propose=exact,coarse={coarse_bits}"
    ))?;
    Ok(format!("{}{PROBE}", generate(&spec)?.source))
}

//! The value `topk_kernel!` expands to.

use crate::Spec;

/// A selector fixed at compile time by [`topk_kernel!`](crate::topk_kernel): the validated Spec,
/// its canonical text, and its generated CUDA source with the entry point and hash. Where code
/// generation does not cover the mapping yet, `source` and `entry` are empty and `hash` is
/// derived from `text` alone.
///
/// ```
/// const KV4: topk::KernelConst = topk::topk_kernel!(k = 2048, stride = 128, split = 4);
/// assert_eq!(KV4.spec, topk::Spec::parse(KV4.text).unwrap());
/// assert_eq!(KV4.hash.len(), 16);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelConst {
    pub spec: Spec,
    /// Canonical text of `spec`, as `Spec::to_string` writes it.
    pub text: &'static str,
    /// Name of the `extern "C" __global__` entry point in `source`.
    pub entry: &'static str,
    /// 16 hex digits identifying the generated kernel.
    pub hash: &'static str,
    /// Self-contained CUDA C++ source.
    pub source: &'static str,
}

impl KernelConst {
    /// Whether code generation produced a kernel for this spec.
    pub fn has_source(&self) -> bool {
        !self.source.is_empty()
    }
}

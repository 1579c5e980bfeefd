//! What the GPU path refuses to plan, and why: the one place the CLI, the Python package and
//! the planner ask.
//!
//! A new kernel path (a dtype, an interface part) enters [`HELD_BACK`] when its code is
//! generated and compiles, and leaves it once its GPU tests and compute-sanitizer pass
//! (`bench/verify_gated.sh` runs them, from a build with the `gpu-unverified` feature, which
//! ignores the table). Until then such specs run on the CPU backend.

use topk_dsl::Spec;

/// A kernel path generated but not yet verified on a GPU: which specs take it, and the
/// sentence that names it in the refusal.
pub struct HeldBack {
    /// Whether `spec` takes this path.
    pub takes: fn(&Spec) -> bool,
    /// What the path is, in spec syntax (e.g. "a row's prior (`prior=P/R`)").
    pub what: &'static str,
}

/// The paths held back from the GPU. Empty: 16-bit scores, a row's prior and boundary output
/// and the page table's row map passed their GPU tests and compute-sanitizer
/// (`bench/RESULTS.md`, "GPU exactness tests").
pub const HELD_BACK: &[HeldBack] = &[];

/// Why the GPU path will not run `spec`, or `None` when it will: what code generation does not
/// cover ([`Spec::gpu_unsupported`]), then what [`HELD_BACK`] names.
pub fn gpu_refusal(spec: &Spec) -> Option<String> {
    if let Some(why) = spec.gpu_unsupported() {
        return Some(why);
    }
    if cfg!(feature = "gpu-unverified") {
        return None;
    }
    held_back_refusal(spec, HELD_BACK)
}

/// The refusal of `spec` by the first entry of `table` that it takes, with what to do.
pub fn held_back_refusal(spec: &Spec, table: &[HeldBack]) -> Option<String> {
    table.iter().find(|h| (h.takes)(spec)).map(|h| {
        format!(
            "{} is generated but not yet verified on a GPU, so the GPU path does not run it; \
             run this spec on the CPU backend (`--backend cpu`, or \
             `topk_runtime::cpu::select_with`), or drop it",
            h.what
        )
    })
}

//! What the GPU path refuses to plan, and why: the one place the CLI, the Python package and
//! the planner ask.

use topk_dsl::{Dtype, Prior, Spec, Transform};

/// Why the GPU path will not run `spec`, or `None` when it will: what code generation does not
/// cover ([`Spec::gpu_unsupported`]), and the 16-bit score dtypes, whose kernels are generated
/// and compile but have not yet been checked against the CPU backend on a GPU (the tests that
/// do so are `topk-runtime/tests/gpu_half.rs`), and likewise a row's prior and boundary output
/// (`prior=P/R`, `boundary=true`; `topk-runtime/tests/gpu_prior.rs`) and a page table read
/// through a row map (`transform=paged(rows)`; `topk-runtime/tests/gpu_call.rs`); until they
/// have, those specs run on the CPU backend. A build with the `gpu-unverified` feature, made to
/// run those tests from the Python package, refuses only what code generation does not cover.
pub fn gpu_refusal(spec: &Spec) -> Option<String> {
    if let Some(why) = spec.gpu_unsupported() {
        return Some(why);
    }
    if cfg!(feature = "gpu-unverified") {
        return None;
    }
    if spec.io.transform == Transform::PagedRows {
        return Some(
            "a page table read through a row map (`transform=paged(rows)`) is generated but not \
             yet verified on a GPU, so the GPU path does not run it; expand the table to one row \
             per score row (`transform=paged`), or run this spec on the CPU backend \
             (`--backend cpu`, or `topk_runtime::cpu::select_with`)"
                .to_string(),
        );
    }
    if spec.io.prior != Prior::None || spec.io.boundary {
        return Some(
            "a row's prior and boundary output (`prior=P/R`, `boundary=true`) are generated but \
             not yet verified on a GPU, so the GPU path does not run them; run this spec on the \
             CPU backend (`--backend cpu`, or `topk_runtime::cpu::select_with`), or drop them"
                .to_string(),
        );
    }
    (spec.dtype != Dtype::F32).then(|| {
        format!(
            "`dtype={}` kernels are generated but not yet verified on a GPU, so the GPU path does \
             not run them; convert the scores to float32, or run this spec on the CPU backend \
             (`--backend cpu`, or `topk_runtime::cpu::select_with`)",
            spec.dtype
        )
    })
}

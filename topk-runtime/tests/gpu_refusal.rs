//! What the GPU path refuses to plan, asked without a GPU: the 16-bit score dtypes (generated,
//! not yet checked on a GPU), with a sentence that says what to do; float32 with every part of
//! the call interface runs.

use topk_dsl::{Dtype, Io, Order, Rows, Spec, Ties, Transform};
use topk_runtime::cuda::gpu_refusal;

#[test]
fn sixteen_bit_scores_are_refused_with_what_to_do() {
    for dtype in [Dtype::F16, Dtype::Bf16] {
        let spec = Spec {
            dtype,
            digits: topk_dsl::Digits::default_for(dtype, 11),
            ..Spec::default()
        };
        assert_eq!(
            spec.gpu_unsupported(),
            None,
            "{spec}: code generation covers it"
        );
        let why = gpu_refusal(&spec).unwrap_or_else(|| panic!("{spec}: not refused"));
        assert!(why.contains(&format!("`dtype={dtype}`")), "{why}");
        assert!(why.contains("not yet verified on a GPU"), "{why}");
        assert!(
            why.contains("float32") && why.contains("CPU backend"),
            "{why}"
        );
    }
}

#[test]
fn float32_with_any_interface_is_not_refused() {
    let io = Io {
        values: true,
        order: Order::Sorted,
        ties: Ties::Lowest,
        rows: Rows::Window { relative: false },
        transform: Transform::Paged,
        ..Io::DEFAULT
    };
    for spec in [
        Spec::default(),
        Spec {
            io,
            ..Spec::default()
        },
    ] {
        assert_eq!(gpu_refusal(&spec), None, "{spec}");
    }
}

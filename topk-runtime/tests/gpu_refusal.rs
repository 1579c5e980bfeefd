//! What the GPU path refuses to plan, asked without a GPU: the 16-bit score dtypes, a row's
//! prior and boundary output, and a page table read through a row map (generated, not yet
//! checked on a GPU), each with a sentence that says what to do; float32 with every other part
//! of the call interface runs.

use topk_dsl::{Io, Order, Rows, Spec, Ties, Transform};
use topk_runtime::cuda::gpu_refusal;

#[test]
#[cfg(not(feature = "gpu-unverified"))]
fn sixteen_bit_scores_are_refused_with_what_to_do() {
    use topk_dsl::Dtype;
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

/// A build for verifying the held-back kernels refuses only what code generation lacks.
#[test]
#[cfg(feature = "gpu-unverified")]
fn a_verification_build_runs_the_held_back_kernels() {
    use topk_dsl::{Dtype, Prior};
    let io = |io: Io| Spec {
        io,
        ..Spec::default()
    };
    for spec in [
        Spec {
            dtype: Dtype::F16,
            digits: topk_dsl::Digits::default_for(Dtype::F16, 11),
            ..Spec::default()
        },
        io(Io {
            prior: Prior::SUGGESTED,
            boundary: true,
            ..Io::DEFAULT
        }),
        io(Io {
            transform: Transform::PagedRows,
            ..Io::DEFAULT
        }),
    ] {
        assert_eq!(gpu_refusal(&spec), None, "{spec}");
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

#[test]
#[cfg(not(feature = "gpu-unverified"))]
fn the_prior_boundary_and_row_map_are_refused_with_what_to_do() {
    use topk_dsl::Prior;
    let with = |io: Io| Spec {
        io,
        ..Spec::default()
    };
    let cases = [
        (
            with(Io {
                prior: Prior::SUGGESTED,
                ..Io::DEFAULT
            }),
            "`prior=P/R`",
        ),
        (
            with(Io {
                boundary: true,
                ..Io::DEFAULT
            }),
            "`boundary=true`",
        ),
        (
            with(Io {
                transform: Transform::PagedRows,
                ..Io::DEFAULT
            }),
            "`transform=paged(rows)`",
        ),
    ];
    for (spec, names) in cases {
        assert_eq!(
            spec.gpu_unsupported(),
            None,
            "{spec}: code generation covers it"
        );
        let why = gpu_refusal(&spec).unwrap_or_else(|| panic!("{spec}: not refused"));
        assert!(
            why.contains(names) && why.contains("not yet verified on a GPU"),
            "{why}"
        );
        assert!(why.contains("CPU backend"), "{why}");
    }
    // Where code generation does not cover them, that is the reason given.
    let kvsplit = Spec::parse("map=kvsplit(4),prior=2/8").unwrap();
    let why = gpu_refusal(&kvsplit).unwrap();
    assert!(
        why.contains("map=kvsplit(4)") && why.contains("map=persistent"),
        "{why}"
    );
}

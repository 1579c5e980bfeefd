//! What the GPU path refuses to plan, asked without a GPU: only what code generation does not
//! cover, and whatever the held-back table names, with a sentence that says what to do.

use topk_dsl::{Digits, Dtype, Io, Order, Prior, Rows, Spec, Ties, Transform};
use topk_runtime::cuda::{gpu_refusal, held_back_refusal, HeldBack};

fn with(io: Io) -> Spec {
    Spec {
        io,
        ..Spec::default()
    }
}

/// Every part of the call interface, 16-bit scores, a row's prior with its boundary output and
/// the page table's row map run on the GPU.
#[test]
fn every_dtype_and_interface_part_runs_on_the_gpu() {
    let mut specs = vec![
        Spec::default(),
        with(Io {
            values: true,
            order: Order::Sorted,
            ties: Ties::Lowest,
            rows: Rows::Window { relative: false },
            transform: Transform::Paged,
            ..Io::DEFAULT
        }),
        with(Io {
            prior: Prior::SUGGESTED,
            boundary: true,
            ..Io::DEFAULT
        }),
        with(Io {
            transform: Transform::PagedRows,
            ..Io::DEFAULT
        }),
    ];
    for dtype in [Dtype::F16, Dtype::Bf16] {
        specs.push(Spec {
            dtype,
            digits: Digits::default_for(dtype, 11),
            ..Spec::default()
        });
    }
    for spec in specs {
        assert_eq!(gpu_refusal(&spec), None, "{spec}");
    }
}

/// Where code generation does not cover a spec, that is the reason given.
#[test]
fn what_code_generation_lacks_is_the_reason() {
    let kvsplit = Spec::parse("map=kvsplit(4),prior=2/8").unwrap();
    let why = gpu_refusal(&kvsplit).unwrap();
    assert!(
        why.contains("map=kvsplit(4)") && why.contains("map=persistent"),
        "{why}"
    );
}

/// A held-back path is refused with its name and the way to the CPU backend; other specs pass.
#[test]
fn a_held_back_path_is_refused_with_what_to_do() {
    let table = [HeldBack {
        takes: |s| s.io.boundary,
        what: "a row's boundary output (`boundary=true`)",
    }];
    let held = with(Io {
        boundary: true,
        ..Io::DEFAULT
    });
    let why = held_back_refusal(&held, &table).expect("refused");
    assert!(why.contains("`boundary=true`"), "{why}");
    assert!(why.contains("not yet verified on a GPU"), "{why}");
    assert!(why.contains("CPU backend"), "{why}");
    assert_eq!(held_back_refusal(&Spec::default(), &table), None);
}

//! Code generation serves every dtype and every part of the call interface on every family:
//! 16-bit scores are read through the 16-bit row stream and their values stored in the score
//! dtype; a plain f32 spec's source knows nothing of the 16-bit code.

use topk_codegen::{generate, sharded::generate_sharded};
use topk_dsl::{Digits, Dtype, Io, Mapping, Order, Rows, Spec, Ties, Transform};

fn sixteen_bit_specs() -> Vec<Spec> {
    [Dtype::F16, Dtype::Bf16]
        .into_iter()
        .map(|dtype| Spec {
            dtype,
            digits: Digits::default_for(dtype, 11),
            ..Spec::default()
        })
        .collect()
}

const MAPPINGS: [Mapping; 3] = [
    Mapping::Persistent,
    Mapping::KvSplit { splits: 4 },
    Mapping::Staged,
];

#[test]
fn every_family_generates_sixteen_bit_scores() {
    for spec in sixteen_bit_specs() {
        assert_eq!(spec.validate(), Ok(()), "{spec}");
        assert_eq!(spec.gpu_unsupported(), None, "{spec}");
        let bf16 = spec.dtype == Dtype::Bf16;
        for mapping in MAPPINGS {
            let spec = Spec { mapping, ..spec };
            let kernel = generate(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            let s = &kernel.source;
            assert!(s.contains("typedef unsigned short score_t;"), "{spec}");
            assert!(s.contains("#define SCORE_BITS 16"), "{spec}");
            assert!(s.contains(&format!("#define SCORE_BF16 {bf16} ")), "{spec}");
            assert!(s.contains("const score_t* __restrict__ scores"), "{spec}");
            // The kernels refine the FP32 key of the widened score: 32-bit digits.
            assert!(s.contains("constexpr int NUM_DIGITS = 3;"), "{spec}");
        }
        let sharded = generate_sharded(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert!(sharded.source.contains("#define SCORE_BITS 16"), "{spec}");
    }
    let plain = generate(&Spec::default()).unwrap();
    assert!(plain.source.contains("typedef float score_t;"));
    assert!(plain.source.contains("#define SCORE_BITS 32"));
}

#[test]
fn every_part_of_the_call_interface_generates() {
    let parts = [
        Io {
            values: true,
            ..Io::DEFAULT
        },
        Io {
            order: Order::Sorted,
            ..Io::DEFAULT
        },
        Io {
            ties: Ties::Lowest,
            ..Io::DEFAULT
        },
        Io {
            rows: Rows::Window { relative: true },
            ..Io::DEFAULT
        },
        Io {
            rows: Rows::Window { relative: false },
            ..Io::DEFAULT
        },
        Io {
            rows: Rows::Decode,
            ..Io::DEFAULT
        },
        Io {
            transform: Transform::Offset,
            ..Io::DEFAULT
        },
        Io {
            transform: Transform::Paged,
            ..Io::DEFAULT
        },
    ];
    for io in parts {
        for mapping in MAPPINGS {
            let spec = Spec {
                mapping,
                io,
                ..Spec::default()
            };
            assert_eq!(spec.gpu_unsupported(), None, "{spec}");
            let kernel = generate(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert!(kernel.source.contains("#define CALL_IO 1"), "{spec}");
        }
    }
}

/// A sorted row's keys are staged beside its positions only by the kernels that set the staging
/// slice up (one CTA commits the whole row), and every such kernel sizes its workspace for it;
/// the others (several CTAs commit a row) gather the keys in the sort.
#[test]
fn sorted_keys_are_staged_exactly_where_a_kernel_sets_the_slice_up() {
    use topk_dsl::RowLocalVariant;
    let mappings = [
        (Mapping::Persistent, true),
        (Mapping::RowLocal(RowLocalVariant::Register), true),
        (Mapping::RowLocal(RowLocalVariant::Streaming), true),
        (Mapping::KvSplit { splits: 4 }, false),
        (Mapping::Cluster { ctas: 8 }, false),
        (Mapping::Staged, false),
    ];
    for (mapping, staged) in mappings {
        let (proposal, threads) = match mapping {
            Mapping::RowLocal(_) => (topk_dsl::Proposal::Exact, 1024),
            Mapping::Cluster { .. } => (Spec::default().proposal, 1024),
            _ => (Spec::default().proposal, Spec::default().threads),
        };
        let spec = Spec {
            mapping,
            proposal,
            threads,
            io: Io {
                order: Order::Sorted,
                ..Io::DEFAULT
            },
            ..Spec::default()
        };
        let kernel = generate(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let s = &kernel.source;
        assert!(
            s.contains(&format!("constexpr bool SORT_KEYS_STAGED = {staged};")),
            "{spec}"
        );
        assert_eq!(kernel.layout.sort_keys_staged, staged, "{spec}");
        let entry = &s[s.rfind("ENTRY(ENTRY_PARAMS)").expect("an entry kernel")..];
        assert_eq!(
            entry.contains("stage_sort_keys(spill, spill_cap)"),
            staged,
            "{spec}"
        );
        if staged {
            assert!(kernel.layout.staging_words_per_cta >= spec.k, "{spec}");
        }
    }
    // The context-parallel stages take the persistent family's constants but gather.
    let spec = Spec {
        io: Io {
            order: Order::Sorted,
            ..Io::DEFAULT
        },
        ..Spec::default()
    };
    let sharded = generate_sharded(&spec).unwrap();
    assert!(sharded
        .source
        .contains("constexpr bool SORT_KEYS_STAGED = false;"));
}

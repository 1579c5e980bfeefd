//! Code generation refuses a spec whose dtype the kernels do not generate yet, with the sentence
//! that says where it runs, before emitting any source: nothing on the GPU is silently wrong.
//! The call interface (values, order, ties, row sources, transforms) generates on every family.

use topk_codegen::{generate, sharded::generate_sharded, CodegenError};
use topk_dsl::{Digits, Dtype, Io, Mapping, Order, Rows, Spec, Ties, Transform};

fn cpu_only_specs() -> Vec<Spec> {
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
fn every_family_refuses_what_it_does_not_generate() {
    for spec in cpu_only_specs() {
        assert_eq!(spec.validate(), Ok(()), "{spec}");
        let why = spec.gpu_unsupported().expect("a CPU-only spec");
        assert!(why.contains("CPU backend only"), "{why}");
        for mapping in MAPPINGS {
            let spec = Spec { mapping, ..spec };
            assert_eq!(
                generate(&spec),
                Err(CodegenError::CpuOnly(why.clone())),
                "{spec}"
            );
        }
        assert!(
            matches!(generate_sharded(&spec), Err(CodegenError::CpuOnly(_))),
            "{spec}"
        );
    }
    assert!(generate(&Spec::default()).is_ok());
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

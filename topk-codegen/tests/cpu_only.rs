//! Code generation refuses a spec whose dtype or interface the kernels do not generate yet,
//! with the sentence that says where it runs, before emitting any source: nothing on the GPU is
//! silently wrong. The plain interface at f32 still generates.

use topk_codegen::{generate, sharded::generate_sharded, CodegenError};
use topk_dsl::{Digits, Dtype, Io, Mapping, Order, Rows, Spec, Ties, Transform};

fn cpu_only_specs() -> Vec<Spec> {
    let io = |io: Io| Spec {
        io,
        ..Spec::default()
    };
    vec![
        Spec {
            dtype: Dtype::F16,
            digits: Digits::default_for(Dtype::F16, 11),
            ..Spec::default()
        },
        Spec {
            dtype: Dtype::Bf16,
            digits: Digits::default_for(Dtype::Bf16, 11),
            ..Spec::default()
        },
        io(Io {
            values: true,
            ..Io::DEFAULT
        }),
        io(Io {
            order: Order::Sorted,
            ..Io::DEFAULT
        }),
        io(Io {
            ties: Ties::Lowest,
            ..Io::DEFAULT
        }),
        io(Io {
            rows: Rows::Window { relative: true },
            ..Io::DEFAULT
        }),
        io(Io {
            rows: Rows::Decode,
            ..Io::DEFAULT
        }),
        io(Io {
            transform: Transform::Offset,
            ..Io::DEFAULT
        }),
        io(Io {
            transform: Transform::Paged,
            ..Io::DEFAULT
        }),
    ]
}

#[test]
fn every_family_refuses_what_it_does_not_generate() {
    for spec in cpu_only_specs() {
        assert_eq!(spec.validate(), Ok(()), "{spec}");
        let why = spec.gpu_unsupported().expect("a CPU-only spec");
        assert!(why.contains("CPU backend only"), "{why}");
        for mapping in [
            Mapping::Persistent,
            Mapping::KvSplit { splits: 4 },
            Mapping::Staged,
        ] {
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

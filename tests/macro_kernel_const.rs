//! What `topk_kernel!` expands to: the Spec its keys describe, defaults for omitted keys, its
//! canonical text, and a hash that tells specs apart.

use topk::dsl::{
    Centi, Digits, Dtype, Io, Mapping, Order, Proposal, RowLocalVariant, Rows, Ties, Transform,
};
use topk::{topk_kernel, KernelConst, Spec};

const DEFAULT: KernelConst = topk_kernel!();
const KV4: KernelConst = topk_kernel!(k = 2048, stride = 128, split = 4);
const KV4_SPELLED_OUT: KernelConst = topk_kernel!(
    threads = 512,
    digits = [11, 11, 10],
    map = kvsplit,
    split = 4,
    propose = sampled,
    rescue = 1.75,
    rho = 1.50,
    stride = 128,
    coarse = 11,
    dtype = f32,
    k = 2048,
);
const S64: KernelConst = topk_kernel!(stride = 64, rescue = none, exact_below = 16384);
const REGISTER: KernelConst = topk_kernel!(
    map = rowlocal_register,
    propose = exact,
    threads = 1024,
    k = 512
);
const CLUSTER: KernelConst = topk_kernel!(
    map = cluster,
    propose = exact,
    threads = 1024,
    digits = "8+8+8+8"
);

/// A serving call's interface on bfloat16 scores: the CPU backend runs it, the kernels do not
/// generate 16-bit dtypes yet.
const SERVING: KernelConst = topk_kernel!(
    dtype = bf16,
    values = true,
    order = sorted,
    ties = lowest,
    rows = window_relative,
    transform = paged,
);

/// The same interface on float32 scores: generated.
const SERVING_F32: KernelConst = topk_kernel!(
    values = true,
    order = sorted,
    ties = lowest,
    rows = window_relative,
    transform = paged,
);

const ALL: [KernelConst; 8] = [
    DEFAULT,
    KV4,
    KV4_SPELLED_OUT,
    S64,
    REGISTER,
    CLUSTER,
    SERVING,
    SERVING_F32,
];

#[test]
fn omitted_keys_take_the_default_spec() {
    assert_eq!(DEFAULT.spec, Spec::default());
    assert_eq!(DEFAULT.text, Spec::default().to_string());
}

#[test]
fn split_alone_selects_kvsplit_and_keeps_the_other_defaults() {
    assert_eq!(
        KV4.spec,
        Spec {
            mapping: Mapping::KvSplit { splits: 4 },
            ..Spec::default()
        }
    );
    assert_eq!(KV4, KV4_SPELLED_OUT);
}

#[test]
fn each_key_sets_its_field() {
    assert_eq!(
        S64.spec.proposal,
        Proposal::Sampled {
            stride: 64,
            rho: Centi(150),
            rescue: None,
            exact_below: 16384,
        }
    );
    assert_eq!(
        S64.text,
        "k=2048,dtype=f32,map=persistent,propose=sampled(stride=64,rho=1.5,exact_below=16384),\
         coarse=11,digits=11+11+10,threads=512"
    );
    assert_eq!(
        REGISTER.spec,
        Spec {
            k: 512,
            mapping: Mapping::RowLocal(RowLocalVariant::Register),
            proposal: Proposal::Exact,
            threads: 1024,
            ..Spec::default()
        }
    );
    assert_eq!(CLUSTER.spec.mapping, Mapping::Cluster { ctas: 8 });
    assert_eq!(
        CLUSTER.spec.digits,
        Digits {
            widths: [8, 8, 8, 8],
            len: 4
        }
    );
}

#[test]
fn interface_keys_set_the_interface_and_a_sixteen_bit_spec_has_its_source() {
    assert_eq!(
        SERVING.spec,
        Spec {
            dtype: Dtype::Bf16,
            digits: Digits::new2(11, 5),
            io: Io {
                values: true,
                order: Order::Sorted,
                ties: Ties::Lowest,
                rows: Rows::Window { relative: true },
                transform: Transform::Paged,
                ..Io::DEFAULT
            },
            ..Spec::default()
        }
    );
    assert!(SERVING
        .text
        .ends_with(",values=true,order=sorted,ties=lowest,rows=window(relative),transform=paged"));
    // bfloat16 scores generate like float32 ones: the const carries the kernel.
    assert!(SERVING.has_source());
    assert_eq!(
        SERVING.entry,
        topk::codegen::generate(&SERVING.spec).unwrap().entry
    );
    assert!(SERVING.source.contains("#define SCORE_BF16 true "));
    assert_eq!(SERVING_F32.spec.io, SERVING.spec.io);
    assert!(SERVING_F32.has_source());
    assert_eq!(
        SERVING_F32.entry,
        topk::codegen::generate(&SERVING_F32.spec).unwrap().entry
    );
}

#[test]
fn the_text_is_canonical_and_parses_back_to_the_spec() {
    for kernel in ALL {
        assert_eq!(kernel.text, kernel.spec.to_string());
        assert_eq!(Spec::parse(kernel.text), Ok(kernel.spec));
        assert_eq!(kernel.spec.validate(), Ok(()));
    }
}

#[test]
fn hashes_are_16_hex_digits_and_tell_specs_apart() {
    for a in ALL {
        assert_eq!(a.hash.len(), 16, "{}", a.text);
        assert!(a
            .hash
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        for b in ALL {
            assert_eq!(
                a.hash == b.hash,
                a.spec == b.spec,
                "{} vs {}",
                a.text,
                b.text
            );
        }
    }
}

#[test]
fn source_and_entry_come_together_and_match_codegen() {
    for kernel in ALL {
        assert_eq!(
            kernel.has_source(),
            !kernel.entry.is_empty(),
            "{}",
            kernel.text
        );
        match topk::codegen::generate(&kernel.spec) {
            Ok(generated) => {
                assert_eq!(kernel.source, generated.source);
                assert_eq!(kernel.entry, generated.entry);
                assert_eq!(kernel.hash, generated.hash);
                assert!(kernel.source.contains(kernel.entry));
            }
            Err(_) => assert!(!kernel.has_source(), "{}", kernel.text),
        }
    }
}

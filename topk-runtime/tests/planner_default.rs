//! The default map: which family and proposal a shape gets without a spec or autotune record.

use topk_dsl::{Mapping, Proposal, RowLocalVariant};
use topk_runtime::cuda::plan::{default_spec, sampled_proposal};

#[test]
fn the_view_keeps_its_sample_rank_as_k_shrinks() {
    for (k, stride) in [
        (16384, 128),
        (4096, 128),
        (2048, 128),
        (1024, 64),
        (512, 32),
        (256, 16),
    ] {
        match sampled_proposal(k) {
            Proposal::Sampled { stride: s, .. } => assert_eq!(s, stride, "K = {k}"),
            Proposal::Exact => panic!("K = {k} should sample"),
        }
        let spec = default_spec(k, 4096, 262_144);
        spec.validate().unwrap();
        // q = ceil(1.5 K / s): 24 samples above the target at every sampled K up to 2048.
        if k <= 2048 {
            assert_eq!(spec.sample_rank(), Some(24), "K = {k}");
        }
    }
    for k in [1, 7, 100, 255] {
        assert_eq!(sampled_proposal(k), Proposal::Exact, "K = {k}");
        default_spec(k, 64, 262_144).validate().unwrap();
    }
}

#[test]
fn short_rows_go_to_the_row_local_kernels() {
    assert_eq!(
        default_spec(2048, 512, 16_384).mapping,
        Mapping::RowLocal(RowLocalVariant::Register)
    );
    assert_eq!(
        default_spec(2048, 512, 40_000).mapping,
        Mapping::RowLocal(RowLocalVariant::Streaming)
    );
    assert_eq!(
        default_spec(2048, 512, 131_072).mapping,
        Mapping::Persistent
    );
}

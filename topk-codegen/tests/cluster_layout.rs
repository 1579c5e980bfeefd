//! The cluster kernels' shared memory: a 1024-thread CTA keeps its segment in a stage after the
//! frontiers, sized so that the whole stays within the opt-in limit of one CTA on sm_90 whatever
//! K, dtype and output order; narrower CTAs (several per SM) keep none.

use topk_codegen::generate;
use topk_dsl::{Digits, Dtype, Io, Mapping, Order, Proposal, Spec};

/// Dynamic shared memory one CTA may opt in to on sm_90, bytes.
const SM90_OPTIN_BYTES: u32 = 227 << 10;

fn cluster_specs() -> Vec<Spec> {
    let mut specs = Vec::new();
    for k in [64, 300, 512, 2048, 4096] {
        for dtype in [Dtype::F32, Dtype::F16, Dtype::Bf16] {
            for threads in [512, 1024] {
                for ctas in [8, 16] {
                    for order in [Order::Any, Order::Sorted] {
                        let spec = Spec {
                            k,
                            dtype,
                            digits: Digits::default_for(dtype, 11),
                            mapping: Mapping::Cluster { ctas },
                            proposal: Proposal::Exact,
                            threads,
                            io: Io {
                                order,
                                ..Io::DEFAULT
                            },
                            ..Spec::default()
                        };
                        if spec.validate().is_ok() {
                            specs.push(spec);
                        }
                    }
                }
            }
        }
    }
    specs
}

#[test]
fn cluster_segment_stages_fit_one_cta_of_shared_memory() {
    let specs = cluster_specs();
    assert!(
        specs.len() >= 24,
        "only {} cluster specs validate",
        specs.len()
    );
    let mut staged = 0;
    for spec in specs {
        let kernel = generate(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let layout = kernel.layout;
        assert!(
            layout.dynamic_smem <= SM90_OPTIN_BYTES,
            "{spec}: {} bytes of shared memory",
            layout.dynamic_smem
        );
        let stage = layout.segment_stage;
        if spec.threads >= 1024 {
            assert!(stage >= 16_384, "{spec}: a stage of only {stage} scores");
            staged += 1;
        } else {
            assert_eq!(stage, 0, "{spec}: narrower CTAs share their SM");
        }
        // Read as 16-byte vectors from a 16-byte aligned word offset.
        assert_eq!(stage % 4, 0, "{spec}");
        assert_eq!(layout.segment_stage_at() % 4, 0, "{spec}");
        assert_eq!(
            layout.segment_stage_at() * 4 + stage * 4,
            layout.dynamic_smem
        );
        let src = &kernel.source;
        assert!(
            src.contains(&format!("constexpr int STAGE_CAP = {stage};")),
            "{spec}"
        );
    }
    assert!(staged > 0);
}

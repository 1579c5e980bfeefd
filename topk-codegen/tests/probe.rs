//! Phase-timing builds: the timers go in at their anchors, the ordinary source stays as it is,
//! and the packed word decodes to the durations it was packed from.

use topk_codegen::probe::{generate_probed, PhaseTimes, PASS_UNIT_NS, PHASE_UNIT_NS};
use topk_codegen::{generate, CodegenError};
use topk_dsl::Spec;

#[test]
fn probed_source_adds_timers_and_leaves_the_ordinary_source_alone() {
    for text in [
        "k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5)",
        "k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5),view=run(2)",
        "k=512,map=persistent,propose=exact",
    ] {
        let spec = Spec::parse(text).unwrap();
        let plain = generate(&spec).unwrap();
        let probed = generate_probed(&spec).unwrap();
        assert!(!plain.source.contains("probe_clock"), "{text}");
        assert_eq!(probed.source.matches("probe_clock()").count(), 5, "{text}");
        assert_eq!(probed.entry, plain.entry);
        assert!(probed.source.len() > plain.source.len());
    }
}

#[test]
fn only_the_persistent_kernel_has_a_probed_build() {
    let spec = Spec::parse("map=rowlocal(streaming),propose=exact,threads=1024").unwrap();
    assert!(matches!(
        generate_probed(&spec),
        Err(CodegenError::Unsupported(why)) if why.contains("persistent")
    ));
}

#[test]
fn phase_words_decode_to_their_durations() {
    let (a, d, b) = (37u32, 1023u32, 4095u32);
    let t = PhaseTimes::decode((a | (d << 10) | (b << 20)) as i32);
    assert_eq!(t.proposal_us, 37.0 * PHASE_UNIT_NS as f64 / 1e3);
    assert_eq!(t.refine_us, 1023.0 * PHASE_UNIT_NS as f64 / 1e3);
    assert_eq!(t.pass_us, 4095.0 * PASS_UNIT_NS as f64 / 1e3);
    assert_eq!(PhaseTimes::decode(0).pass_us, 0.0);
}

//! The endpoint probe is the exact persistent kernel's source plus one entry, for every coarse
//! width a Spec accepts, and nothing for the widths it refuses.

use topk_codegen::endpoint_probe::{endpoint_probe_source, ENDPOINT_PROBE_ENTRY};
use topk_codegen::CodegenError;

#[test]
fn probe_source_exists_for_every_valid_coarse_width() {
    for bits in 8..=12u8 {
        let source = endpoint_probe_source(bits).unwrap();
        let entry = format!("void {ENDPOINT_PROBE_ENTRY}(");
        assert_eq!(source.matches(&entry).count(), 1, "coarse={bits}");
        let bins = format!("constexpr int COARSE_BINS = {};", 1u32 << bits);
        assert!(source.contains(&bins), "coarse={bits}");
    }
}

#[test]
fn refused_coarse_widths_give_the_spec_error() {
    for bits in [7u8, 13] {
        assert!(matches!(
            endpoint_probe_source(bits),
            Err(CodegenError::Spec(_))
        ));
    }
}

//! The generator's CUDA source compiles with NVRTC alone (no GPU), and its float arithmetic
//! stays free of fused multiply-adds, which would break bit equality with the CPU generator.

use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
use topk_codegen::generator::{generator_source, GENERATOR_ENTRY};

/// Whether libnvrtc can be loaded; cudarc panics on first use when it cannot.
fn nvrtc_present() -> bool {
    // SAFETY: only tries to open the shared library by its candidate names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

#[test]
fn generator_compiles_for_sm90a_without_fma() {
    if !nvrtc_present() {
        eprintln!(
            "skipped generator_compiles_for_sm90a_without_fma: libnvrtc not found \
             (set LD_LIBRARY_PATH to a CUDA 13 nvrtc)"
        );
        return;
    }
    // Default flags contract a*b+c into an FMA wherever the source allows it; the generator
    // must compile to the same arithmetic with and without contraction. (Flushing subnormals
    // changes nothing either: no generated arithmetic has a subnormal operand or result.)
    for (fmad, ftz) in [
        (None, None),
        (Some(true), Some(true)),
        (Some(false), Some(false)),
    ] {
        let opts = CompileOptions {
            arch: Some("sm_90a"),
            fmad,
            ftz,
            ..Default::default()
        };
        let ptx = compile_ptx_with_opts(generator_source(), opts)
            .unwrap_or_else(|e| panic!("generator does not compile: {e}"))
            .to_src();
        assert!(
            ptx.contains(&format!(".entry {GENERATOR_ENTRY}(")),
            "entry missing"
        );
        assert!(
            !ptx.contains("fma.rn.f32"),
            "float arithmetic was contracted into an FMA"
        );
        // IEEE divisions (`div.rn[.ftz].f32`), never the approximate `div.approx`/`div.full`.
        assert!(
            ptx.contains("div.rn."),
            "divisions are not IEEE round-to-nearest"
        );
        assert!(!ptx.contains("div.approx") && !ptx.contains("div.full"));
    }
}

//! Every preset's generated CUDA compiles to a CUBIN with NVRTC, without a GPU. CI installs
//! libnvrtc from PyPI (`nvidia-cuda-nvrtc`); where it is absent this test says so and skips.

use topk_runtime::cuda::nvrtc::{compile, nvrtc_available, Arch};

/// The architecture the tests compile for, or None (with a note naming `test`) without NVRTC.
fn sm90a_or_skip(test: &str) -> Option<Arch> {
    if let Err(e) = nvrtc_available() {
        eprintln!("skipped {test}: {e}");
        return None;
    }
    Some("sm_90a".parse().unwrap())
}

#[test]
fn every_preset_and_helper_kernel_compiles_with_nvrtc() {
    let Some(arch) = sm90a_or_skip("every_preset_and_helper_kernel_compiles_with_nvrtc") else {
        return;
    };
    let mut compiled = 0;
    for preset in topk_dsl::PRESETS {
        let Ok(kernel) = topk_codegen::generate(&preset.spec) else {
            continue; // families not generated yet are covered by the codegen tests
        };
        let out = compile(&kernel.source, &kernel.entry, &arch)
            .unwrap_or_else(|e| panic!("preset {} does not compile: {e}", preset.name));
        assert_eq!(&out.cubin[..4], b"\x7fELF", "{}: not a CUBIN", preset.name);
        compiled += 1;
    }
    assert!(compiled >= 6, "only {compiled} presets compiled");
    let verifier = topk_codegen::verifier::verifier_source();
    compile(verifier, topk_codegen::verifier::VERIFIER_ENTRY, &arch).expect("verifier compiles");
    // Grouped views (view=run(R)) on the persistent and KV-split kernels.
    for run in [2u8, 4, 8] {
        for map in ["persistent", "kvsplit(4)"] {
            let spec = topk_dsl::Spec::parse(&format!("map={map},view=run({run})")).unwrap();
            let kernel = topk_codegen::generate(&spec).unwrap();
            compile(&kernel.source, &kernel.entry, &arch)
                .unwrap_or_else(|e| panic!("{spec} does not compile: {e}"));
        }
    }
    // The 16-CTA cluster (non-portable size), exact and sampled (stride and pair-grouped views).
    for text in [
        "map=cluster(16),propose=exact,threads=1024",
        "map=cluster(16),propose=sampled(stride=128,rho=1.75,rescue=2.5),threads=1024",
        "map=cluster(16),propose=sampled(stride=128,rho=2,rescue=2.5),threads=1024,view=run(2)",
    ] {
        let spec = topk_dsl::Spec::parse(text).unwrap();
        let kernel = topk_codegen::generate(&spec).unwrap();
        compile(&kernel.source, &kernel.entry, &arch)
            .unwrap_or_else(|e| panic!("{spec} does not compile: {e}"));
    }
    // Every autotune candidate (the default map's policies among them, the stage chain at 1M)
    // at two ranks and three widths.
    for k in [2048u32, 512] {
        for width in [32_768u32, 131_072, 1 << 20] {
            for spec in topk_runtime::autotune::candidates(k, width) {
                let kernel = topk_codegen::generate(&spec).unwrap();
                compile(&kernel.source, &kernel.entry, &arch)
                    .unwrap_or_else(|e| panic!("candidate {spec} does not compile: {e}"));
            }
        }
    }
    // Phase-timing builds of the default persistent kernel (stride and pair-grouped views).
    for spec in [
        topk_runtime::cuda::plan::context_parallel_spec(2048),
        topk_runtime::cuda::plan::persistent_spec(2048),
    ] {
        let kernel = topk_codegen::probe::generate_probed(&spec).unwrap();
        compile(&kernel.source, &kernel.entry, &arch)
            .unwrap_or_else(|e| panic!("phase probe of {spec} does not compile: {e}"));
    }
    // The context-parallel stages, for every sampled and exact persistent preset.
    for preset in topk_dsl::PRESETS {
        let Ok(sharded) = topk_codegen::sharded::generate_sharded(&preset.spec) else {
            continue; // other mappings are refused with a reason (codegen tests)
        };
        for entry in [&sharded.entry, &sharded.sum_entry] {
            let out = compile(&sharded.source, entry, &arch)
                .unwrap_or_else(|e| panic!("sharded {} does not compile: {e}", preset.name));
            assert_eq!(
                &out.cubin[..4],
                b"\x7fELF",
                "sharded {}: not a CUBIN",
                preset.name
            );
        }
    }
}

/// Every valid combination of block size, coarse width and view on the sampled mappings
/// compiles: the shared-memory layout (frontier capacity, histogram size, scratch words) and the
/// launch bounds differ along each of these axes.
#[test]
fn block_sizes_coarse_widths_and_views_compile_with_nvrtc() {
    let Some(arch) = sm90a_or_skip("block_sizes_coarse_widths_and_views_compile_with_nvrtc") else {
        return;
    };
    let mut compiled = 0;
    for map in ["persistent", "kvsplit(2)", "cluster(8)"] {
        for threads in [128, 256, 384, 512, 1024] {
            for coarse in [8, 12] {
                for view in ["", ",view=run(2)"] {
                    let text = format!(
                        "k=2048,map={map},propose=sampled(stride=128,rho=1.75,rescue=2.5),\
                         coarse={coarse},threads={threads}{view}"
                    );
                    let spec = topk_dsl::Spec::parse(&text).unwrap();
                    if spec.validate().is_err() {
                        continue; // e.g. clusters below 512 threads, 384 off the persistent pool
                    }
                    let kernel = topk_codegen::generate(&spec).unwrap();
                    compile(&kernel.source, &kernel.entry, &arch)
                        .unwrap_or_else(|e| panic!("{spec} does not compile: {e}"));
                    compiled += 1;
                }
            }
        }
    }
    // persistent 18 (384 threads not with coarse=12), KV-split 16 (not 384), cluster 8 (512, 1024)
    assert_eq!(compiled, 42, "combinations compiled");
}

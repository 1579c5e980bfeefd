//! Every preset's generated CUDA compiles to a CUBIN with NVRTC, without a GPU. CI installs
//! libnvrtc from PyPI (`nvidia-cuda-nvrtc`); where it is absent this test says so and skips.
//!
//! The grids of variants (autotune candidates, block sizes, call interfaces, 16-bit scores, the
//! prior) assemble the first kernel of each family, score dtype and block size to a CUBIN and
//! take the others to PTX (the presets are all assembled): NVRTC's front end and code generator
//! see every variant, the assembler each family's code at every block size, in a fraction of
//! the time of assembling them all (the suite runs on two-core CI machines).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use topk_runtime::cuda::nvrtc::{compile, compile_ptx, nvrtc_available, resources, Arch};

/// The architecture the tests compile for, or None (with a note naming `test`) without NVRTC.
fn sm90a_or_skip(test: &str) -> Option<Arch> {
    if let Err(e) = nvrtc_available() {
        eprintln!("skipped {test}: {e}");
        return None;
    }
    Some("sm_90a".parse().unwrap())
}

/// Kernels to compile: what it is, source, entry, and the group whose first kernel is assembled
/// (`None`: always assembled).
#[derive(Default)]
struct Jobs(Vec<Job>);

struct Job {
    label: String,
    source: String,
    entry: String,
    group: Option<String>,
}

impl Jobs {
    /// A kernel compiled to a CUBIN.
    fn push(&mut self, label: impl Into<String>, source: &str, entry: &str) {
        self.0.push(Job {
            label: label.into(),
            source: source.to_owned(),
            entry: entry.to_owned(),
            group: None,
        });
    }

    /// A variant of `spec`'s kernel: to a CUBIN if it is the first of its family, score dtype
    /// and block size here (the launch bounds the assembler allocates for), else to PTX.
    fn push_variant(&mut self, spec: &topk_dsl::Spec) {
        let kernel = topk_codegen::generate(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        self.0.push(Job {
            label: spec.to_string(),
            source: kernel.source,
            entry: kernel.entry,
            group: Some(format!(
                "{} {} {}",
                kernel.family.name(),
                spec.dtype,
                spec.threads
            )),
        });
    }

    /// Compiles every job (the same source and entry once) on every core: NVRTC compiles
    /// independent programs side by side, and one at a time this test took minutes. Panics
    /// naming every job that fails.
    fn compile_all(self, arch: &Arch) {
        let mut seen = HashSet::new();
        let mut groups = HashSet::new();
        let jobs: Vec<(Job, bool)> = self
            .0
            .into_iter()
            .filter(|job| seen.insert((job.source.clone(), job.entry.clone())))
            .map(|job| {
                let assemble = match &job.group {
                    None => true,
                    Some(group) => groups.insert(group.clone()),
                };
                (job, assemble)
            })
            .collect();
        on_every_core(&jobs, |(job, assemble)| {
            let problem = if *assemble {
                match compile(&job.source, &job.entry, arch) {
                    Ok(out) if out.cubin.starts_with(b"\x7fELF") => return None,
                    Ok(_) => "not a CUBIN".to_owned(),
                    Err(e) => format!("does not compile: {e}"),
                }
            } else {
                match compile_ptx(&job.source, &job.entry, arch) {
                    Ok(ptx) if ptx.contains(&format!(".entry {}", job.entry)) => return None,
                    Ok(_) => format!("PTX without the entry {}", job.entry),
                    Err(e) => format!("does not compile: {e}"),
                }
            };
            Some(format!("{} {problem}", job.label))
        });
    }
}

/// Runs `check` on every item, on every core (NVRTC compiles independent programs side by side;
/// one at a time these tests took minutes), and panics with every problem it returns.
fn on_every_core<T: Sync>(items: &[T], check: impl Fn(&T) -> Option<String> + Sync) {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..workers.min(items.len()) {
            scope.spawn(|| {
                while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if let Some(problem) = check(item) {
                        failures.lock().unwrap().push(problem);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_preset_and_helper_kernel_compiles_with_nvrtc() {
    let Some(arch) = sm90a_or_skip("every_preset_and_helper_kernel_compiles_with_nvrtc") else {
        return;
    };
    let mut jobs = Jobs::default();
    let mut presets = 0;
    for preset in topk_dsl::PRESETS {
        let Ok(kernel) = topk_codegen::generate(&preset.spec) else {
            continue; // families not generated yet are covered by the codegen tests
        };
        jobs.push(
            format!("preset {}", preset.name),
            &kernel.source,
            &kernel.entry,
        );
        presets += 1;
    }
    assert!(presets >= 6, "only {presets} presets generated");
    jobs.push(
        "the verifier",
        topk_codegen::verifier::verifier_source(),
        topk_codegen::verifier::VERIFIER_ENTRY,
    );
    // Grouped views (view=run(R)) on the persistent and KV-split kernels.
    for run in [2u8, 4, 8] {
        for map in ["persistent", "kvsplit(4)"] {
            let spec = topk_dsl::Spec::parse(&format!("map={map},view=run({run})")).unwrap();
            let kernel = topk_codegen::generate(&spec).unwrap();
            jobs.push(spec.to_string(), &kernel.source, &kernel.entry);
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
        jobs.push(spec.to_string(), &kernel.source, &kernel.entry);
    }
    // Two row-stream batches sent to L2 ahead, on a 512-thread pool (the default map sends one,
    // on 384-thread pools: among the autotune candidates below).
    let spec = topk_dsl::Spec::parse("prefetch=2,view=run(2)").unwrap();
    let kernel = topk_codegen::generate(&spec).unwrap();
    jobs.push(spec.to_string(), &kernel.source, &kernel.entry);
    // Every autotune candidate (the default map's policies among them, the stage chain at 1M)
    // at two ranks and three widths.
    for k in [2048u32, 512] {
        for width in [32_768u32, 131_072, 1 << 20] {
            for spec in topk_runtime::autotune::candidates(k, width) {
                jobs.push_variant(&spec);
            }
        }
    }
    // Phase-timing builds of the default persistent kernel (stride and pair-grouped views) and
    // of the cluster kernels (exact and sampled).
    for spec in [
        topk_runtime::policy::context_parallel_spec(2048),
        topk_runtime::policy::persistent_spec(2048),
        topk_runtime::policy::cluster_spec(2048, 16),
        topk_runtime::policy::sampled_cluster_spec(2048, 8, 1 << 20),
    ] {
        let kernel = topk_codegen::probe::generate_probed(&spec).unwrap();
        jobs.push(
            format!("phase probe of {spec}"),
            &kernel.source,
            &kernel.entry,
        );
    }
    // The GPU tests' closed-form endpoint probe, at every coarse width.
    for bits in 8..=12u8 {
        let source = topk_codegen::endpoint_probe::endpoint_probe_source(bits).unwrap();
        jobs.push(
            format!("endpoint probe, coarse={bits}"),
            &source,
            topk_codegen::endpoint_probe::ENDPOINT_PROBE_ENTRY,
        );
    }
    // The context-parallel stages, for every sampled and exact persistent preset.
    for preset in topk_dsl::PRESETS {
        let Ok(sharded) = topk_codegen::sharded::generate_sharded(&preset.spec) else {
            continue; // other mappings are refused with a reason (codegen tests)
        };
        for entry in [&sharded.entry, &sharded.sum_entry] {
            jobs.push(format!("sharded {}", preset.name), &sharded.source, entry);
        }
    }
    jobs.compile_all(&arch);
}

/// Every valid combination of block size, coarse width and view on the sampled mappings
/// compiles: the shared-memory layout (frontier capacity, histogram size, scratch words) and the
/// launch bounds differ along each of these axes.
#[test]
fn block_sizes_coarse_widths_and_views_compile_with_nvrtc() {
    let Some(arch) = sm90a_or_skip("block_sizes_coarse_widths_and_views_compile_with_nvrtc") else {
        return;
    };
    let mut jobs = Jobs::default();
    let mut combinations = 0;
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
                    jobs.push_variant(&spec);
                    combinations += 1;
                }
            }
        }
    }
    jobs.compile_all(&arch);
    // persistent 18 (384 threads not with coarse=12), KV-split 16 (not 384), cluster 8 (512, 1024)
    assert_eq!(combinations, 42, "combinations compiled");
}

/// Every kernel family compiles every part of the call interface (`docs/interface.md`): row
/// windows (relative and absolute indices), decode rows, offset and page-table transforms,
/// values, sorted output and lowest-index ties (`topk_dsl::call_interface_samples`).
#[test]
fn every_family_compiles_the_call_interface_with_nvrtc() {
    let Some(arch) = sm90a_or_skip("every_family_compiles_the_call_interface_with_nvrtc") else {
        return;
    };
    let mut jobs = Jobs::default();
    for spec in topk_dsl::call_interface_samples() {
        jobs.push_variant(&spec);
    }
    jobs.compile_all(&arch);
}

/// Every kernel family compiles with 16-bit scores (`dtype=f16`, `dtype=bf16`: the row stream's
/// 16-bit vectors, the values stored in the score dtype), plain and with the call interface, and
/// the grouped views' 16-bit group loads (`topk_dsl::sixteen_bit_samples`).
#[test]
fn every_family_compiles_sixteen_bit_scores_with_nvrtc() {
    let Some(arch) = sm90a_or_skip("every_family_compiles_sixteen_bit_scores_with_nvrtc") else {
        return;
    };
    let mut jobs = Jobs::default();
    let samples = topk_dsl::sixteen_bit_samples();
    for spec in &samples {
        jobs.push_variant(spec);
    }
    assert_eq!(samples.len(), 2 * (8 * 2 + 3), "samples compiled");
    jobs.compile_all(&arch);
}

/// A row's prior and boundary output compile on every family that generates them, with the
/// rest of the call interface and with 16-bit scores (`topk_dsl::prior_samples`); the other
/// families refuse them at code generation, naming the families that take them.
#[test]
fn the_prior_and_boundary_compile_with_nvrtc_where_generated() {
    for text in [
        "map=kvsplit(4),prior=2/8",
        "map=kvsplit(2),boundary=true",
        "map=staged,prior=1/2",
    ] {
        let spec = topk_dsl::Spec::parse(text).unwrap();
        let refused = topk_codegen::generate(&spec).unwrap_err().to_string();
        assert!(refused.contains("map=persistent"), "{text}: {refused}");
    }
    let Some(arch) = sm90a_or_skip("the_prior_and_boundary_compile_with_nvrtc_where_generated")
    else {
        return;
    };
    let mut jobs = Jobs::default();
    let samples = topk_dsl::prior_samples();
    for spec in &samples {
        jobs.push_variant(spec);
    }
    assert_eq!(samples.len(), 6 * 4, "samples compiled");
    jobs.compile_all(&arch);
}

/// The default map's kernels keep their values in registers: on the H200's facts, every kernel
/// the map picks at K = 2048 over a grid of shapes assembles without spills, with `ties=lowest`
/// (whose tie rounds once spilled 700-800 bytes per thread on the 256- and 512-thread pools)
/// with at most a few words, and at K = 512 within a small budget (its 384-thread pool spills 36
/// bytes). A spill in the row stream costs a bandwidth-bound kernel its speed.
#[test]
fn the_default_maps_kernels_assemble_without_spills() {
    let Some(arch) = sm90a_or_skip("the_default_maps_kernels_assemble_without_spills") else {
        return;
    };
    use topk_runtime::policy::{default_spec, DeviceFacts};
    /// Spill bytes per thread allowed with `ties=lowest` (its rounds are not unrolled).
    const LOWEST_TIES_SPILL: u32 = 16;
    /// Spill bytes per thread allowed at K = 512 (`bench/RESULTS.md` times K = 2048 only).
    const K512_SPILL: u32 = 48;
    let facts = DeviceFacts::h200();
    let mut specs: Vec<(topk_dsl::Spec, u32)> = Vec::new();
    let mut seen = HashSet::new();
    for k in [2048u32, 512] {
        for rows in [1u32, 8, 32, 512, 2048, 8192, 16_384] {
            for width in [32_768u32, 65_536, 131_072, 262_144, 1 << 20] {
                let plain = default_spec(&facts, k, rows, width);
                let mut lowest = plain;
                lowest.io.ties = topk_dsl::Ties::Lowest;
                let plain_allowed = if k == 2048 { 0 } else { K512_SPILL };
                for (spec, allowed) in [(plain, plain_allowed), (lowest, LOWEST_TIES_SPILL)] {
                    if (k == 2048 || allowed == plain_allowed) && seen.insert(spec.to_string()) {
                        specs.push((spec, allowed));
                    }
                }
            }
        }
    }
    on_every_core(&specs, |(spec, allowed)| {
        let kernel = topk_codegen::generate(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let problem = match resources(&kernel.source, &kernel.entry, &arch) {
            Ok(r) if r.spill_stores.max(r.spill_loads) <= *allowed => return None,
            Ok(r) => format!(
                "spills {} bytes stored / {} loaded per thread ({} registers; at most {allowed})",
                r.spill_stores, r.spill_loads, r.registers
            ),
            Err(e) => format!("{e}"),
        };
        Some(format!("{spec}: {problem}"))
    });
    assert!(specs.len() >= 8, "only {} kernels checked", specs.len());
}

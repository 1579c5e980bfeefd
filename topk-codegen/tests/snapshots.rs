//! Reviewed snapshots of the generated CUDA, kept the way naga keeps its golden files: each
//! fragment (`src/cuda/*.cu`) once, and per preset its generated prelude (constants and
//! interface) with the list of fragments it includes. An edit to one fragment moves one
//! snapshot; a change to what a Spec generates moves that Spec's outline.

use topk_codegen::{composition, fragments, generate, CodegenError, Family};
use topk_dsl::PRESETS;

#[test]
fn every_fragment_has_one_reviewed_snapshot() {
    for fragment in fragments::ALL {
        let stem = fragment.name.trim_end_matches(".cu");
        insta::assert_snapshot!(format!("fragment-{stem}"), fragment.text);
    }
}

#[test]
fn every_fragment_is_a_file_of_the_cuda_folder_and_every_file_a_fragment() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cuda");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let mut names: Vec<&str> = fragments::ALL.iter().map(|f| f.name).collect();
    names.sort();
    assert_eq!(files, names);
}

#[test]
fn every_preset_is_its_reviewed_outline_over_the_fragments() {
    for preset in PRESETS {
        let kernel = generate(&preset.spec).unwrap();
        let parts = composition(&preset.spec).unwrap();
        assert_eq!(kernel.source, parts.source(), "{}", preset.name);
        assert!(
            !kernel.source.contains("#include"),
            "{}: source must be self-contained",
            preset.name
        );
        assert!(kernel
            .source
            .contains(&format!("#define ENTRY {}", kernel.entry)));
        assert!(kernel.entry.ends_with(&kernel.hash));
        insta::assert_snapshot!(preset.name, parts.outline());
    }
}

#[test]
fn same_spec_gives_same_bytes_and_different_specs_different_names() {
    let mut entries = std::collections::HashSet::new();
    for preset in PRESETS {
        if let (Ok(a), Ok(b)) = (generate(&preset.spec), generate(&preset.spec)) {
            assert_eq!(
                a.source, b.source,
                "{}: generation is not deterministic",
                preset.name
            );
            assert!(
                entries.insert(a.entry.clone()),
                "{}: entry name collides",
                preset.name
            );
        }
    }
    assert!(
        entries.len() >= 4,
        "persistent and row-local presets must generate"
    );
}

#[test]
fn context_parallel_stages_have_a_reviewed_snapshot_and_refuse_other_mappings() {
    use topk_codegen::sharded::generate_sharded;
    let spec = topk_dsl::Spec::default();
    let src = generate_sharded(&spec).unwrap();
    assert!(!src.source.contains("#include"));
    assert!(src.source.contains(&format!("#define ENTRY {}", src.entry)));
    assert!(src
        .source
        .contains(&format!("#define SUM_ENTRY {}", src.sum_entry)));
    assert_eq!(
        generate_sharded(&spec).unwrap(),
        src,
        "same spec, same bytes"
    );
    let parts = topk_codegen::sharded::composition(&spec).unwrap();
    assert_eq!(parts.source(), src.source);
    insta::assert_snapshot!("sharded-default", parts.outline());
    for preset in PRESETS {
        if preset.spec.mapping != topk_dsl::Mapping::Persistent {
            assert!(
                matches!(
                    generate_sharded(&preset.spec),
                    Err(CodegenError::Unsupported(_))
                ),
                "{}: only persistent specs drive the context-parallel stages",
                preset.name
            );
        }
    }
    // The stages have no worker pool: a staggered spec is refused, naming the field.
    let staggered = topk_dsl::Spec {
        stagger_us: 16,
        ..spec
    };
    match generate_sharded(&staggered) {
        Err(CodegenError::Unsupported(why)) => assert!(why.contains("stagger"), "{why}"),
        other => panic!("{staggered}: {other:?}"),
    }
    // Nor a pool whose last rows take a wider margin.
    let tailed = topk_dsl::Spec {
        tail_rows: 264,
        tail_rho: topk_dsl::Centi(160),
        ..spec
    };
    match generate_sharded(&tailed) {
        Err(CodegenError::Unsupported(why)) => assert!(why.contains("tail"), "{why}"),
        other => panic!("{tailed}: {other:?}"),
    }
    // Nor one whose streams prefetch.
    let prefetching = topk_dsl::Spec {
        prefetch: 1,
        ..spec
    };
    match generate_sharded(&prefetching) {
        Err(CodegenError::Unsupported(why)) => assert!(why.contains("prefetch"), "{why}"),
        other => panic!("{prefetching}: {other:?}"),
    }
}

#[test]
fn sixteen_cta_clusters_share_the_eight_cta_body() {
    let spec = topk_dsl::Spec::parse("map=cluster(16),propose=exact,threads=1024").unwrap();
    let kernel = generate(&spec).unwrap();
    assert_eq!(kernel.family, Family::Cluster { ctas: 16 });
    assert_eq!(kernel.family.name(), "cluster16");
    assert!(kernel.source.contains("constexpr u32 CLUSTER_CTAS = 16;"));
    assert_eq!(kernel.layout.ctas_per_row, 16);
    // Apart from the cluster size, its source is the 8-CTA body.
    let eight = generate(&topk_dsl::Spec {
        mapping: topk_dsl::Mapping::Cluster { ctas: 8 },
        ..spec
    })
    .unwrap();
    let body = |s: &str, e: &str| {
        s.lines()
            .filter(|l| {
                !l.contains("CLUSTER_CTAS =")
                    && !l.starts_with("// spec:")
                    && !l.starts_with("// family:")
            })
            .collect::<Vec<_>>()
            .join("\n")
            .replace(e, "E")
    };
    assert_eq!(
        body(&kernel.source, &kernel.entry),
        body(&eight.source, &eight.entry)
    );
}

#[test]
fn the_staged_mapping_generates_the_context_parallel_stages() {
    use topk_codegen::sharded::generate_sharded;
    let spec = topk_dsl::Spec {
        mapping: topk_dsl::Mapping::Staged,
        ..topk_dsl::Spec::default()
    };
    let kernel = generate(&spec).unwrap();
    let stages = generate_sharded(&spec).unwrap();
    assert_eq!(kernel.family, Family::Staged);
    assert_eq!(kernel.entry, stages.entry);
    assert_eq!(kernel.source, stages.source);
    assert_eq!(kernel.layout.dynamic_smem, stages.dynamic_smem);
    assert_eq!(kernel.layout.threads, stages.threads);
    assert!(kernel.entry.ends_with(&kernel.hash));
    // Only the header comment differs from the persistent spec's stages.
    let persistent = generate_sharded(&topk_dsl::Spec::default()).unwrap();
    let body = |s: &str| s.lines().skip(2).collect::<Vec<_>>().join("\n");
    assert_eq!(
        body(&stages.source)
            .replace(&stages.entry, "E")
            .replace(&stages.sum_entry, "S"),
        body(&persistent.source)
            .replace(&persistent.entry, "E")
            .replace(&persistent.sum_entry, "S")
    );
    // The stages sample the stride view only.
    let grouped = topk_dsl::Spec {
        view_run: 2,
        ..spec
    };
    assert!(grouped.validate().is_err());
}

#[test]
fn grouped_views_swap_only_the_proposal_block() {
    let stride_view = topk_dsl::Spec::default();
    let plain = generate(&stride_view).unwrap();
    assert!(!plain.source.contains("VIEW_RUN"));
    for run in [2u8, 4, 8] {
        let spec = topk_dsl::Spec {
            view_run: run,
            ..stride_view
        };
        let kernel = generate(&spec).unwrap();
        assert!(kernel
            .source
            .contains(&format!("constexpr int VIEW_RUN = {run};")));
        assert!(kernel.source.contains("load_group"));
        assert_ne!(kernel.hash, plain.hash);
        if run == 4 {
            insta::assert_snapshot!("persistent-run4", composition(&spec).unwrap().outline());
        }
    }
}

/// The pairs of lines where two generated sources differ; the sources have the same line count.
fn differing_lines<'a>(a: &'a str, b: &'a str) -> Vec<(&'a str, &'a str)> {
    assert_eq!(a.lines().count(), b.lines().count());
    a.lines().zip(b.lines()).filter(|(x, y)| x != y).collect()
}

#[test]
fn a_stagger_changes_only_its_constant_and_the_names() {
    let plain = generate(&topk_dsl::Spec::default()).unwrap();
    let staggered = generate(&topk_dsl::Spec {
        stagger_us: 16,
        ..topk_dsl::Spec::default()
    })
    .unwrap();
    assert!(plain.source.contains("constexpr u64 STAGGER_NS = 0;"));
    assert!(staggered
        .source
        .contains("constexpr u64 STAGGER_NS = 16000;"));
    assert_ne!(staggered.hash, plain.hash);
    // Every other line is the same: the spec comment, the constant and the entry name differ.
    let differing = differing_lines(&plain.source, &staggered.source);
    assert_eq!(differing.len(), 3, "{differing:#?}");
    assert!(differing[0].1.ends_with(",stagger=16"), "{differing:#?}");
    assert!(differing[1].1.starts_with("constexpr u64 STAGGER_NS"));
    assert!(differing[2].1.starts_with("#define ENTRY"));
}

#[test]
fn a_prefetch_changes_only_its_constant_and_the_names() {
    let plain = generate(&topk_dsl::Spec::default()).unwrap();
    let prefetching = generate(&topk_dsl::Spec {
        prefetch: 2,
        ..topk_dsl::Spec::default()
    })
    .unwrap();
    assert!(plain.source.contains("constexpr int PREFETCH_AHEAD = 0;"));
    assert_ne!(prefetching.hash, plain.hash);
    let differing = differing_lines(&plain.source, &prefetching.source);
    assert_eq!(differing.len(), 3, "{differing:#?}");
    assert!(differing[0].1.ends_with(",prefetch=2"), "{differing:#?}");
    assert!(differing[1]
        .1
        .starts_with("constexpr int PREFETCH_AHEAD = 2;"));
    assert!(differing[2].1.starts_with("#define ENTRY"));
}

#[test]
fn a_tail_margin_changes_only_its_constants_and_the_names() {
    let plain = generate(&topk_dsl::Spec::default()).unwrap();
    let tailed = generate(&topk_dsl::Spec {
        tail_rows: 264,
        tail_rho: topk_dsl::Centi(160),
        ..topk_dsl::Spec::default()
    })
    .unwrap();
    // Without a tail its rank is the primary one and no row is in it.
    assert!(plain.source.contains("constexpr int TAIL_RANK = 24;"));
    assert!(plain.source.contains("constexpr int TAIL_ROWS = 0;"));
    assert!(tailed.source.contains("constexpr int TAIL_RANK = 26;"));
    assert!(tailed.source.contains("constexpr int TAIL_ROWS = 264;"));
    assert_ne!(tailed.hash, plain.hash);
    let differing = differing_lines(&plain.source, &tailed.source);
    assert_eq!(differing.len(), 4, "{differing:#?}");
    assert!(differing[0].1.ends_with(",tail=1.6@264"), "{differing:#?}");
    assert!(differing[1].1.starts_with("constexpr int TAIL_RANK"));
    assert!(differing[2].1.starts_with("constexpr int TAIL_ROWS"));
    assert!(differing[3].1.starts_with("#define ENTRY"));
    // Without a rescue the tail's rank is the deepest a view must hold, on every row, as the
    // CPU backend's `Spec::min_view_len`.
    let no_rescue =
        topk_dsl::Spec::parse("propose=sampled(stride=128,rho=1.5),tail=2@264").unwrap();
    let source = generate(&no_rescue).unwrap().source;
    assert!(source.contains("constexpr int MIN_VIEW = 32;"), "{source}");
    assert!(source.contains("constexpr int SAMPLE_RANK = 24;"));
    assert!(source.contains("constexpr int TAIL_RANK = 32;"));
}

/// The call interface adds its constants, its arguments' struct and the `callio.cu` fragment to
/// a spec's outline; the entry takes the spec's row source, transform and values parameters.
#[test]
fn the_call_interface_has_a_reviewed_outline() {
    let spec = topk_dsl::Spec::parse(
        "rows=window(relative),transform=paged,values=true,order=sorted,ties=lowest",
    )
    .unwrap();
    insta::assert_snapshot!("persistent-call", composition(&spec).unwrap().outline());
    let staged = topk_dsl::Spec::parse("map=staged,rows=decode,transform=offset").unwrap();
    insta::assert_snapshot!("staged-call", composition(&staged).unwrap().outline());
}

/// A row's prior and boundary output add `CALL_PRIOR` / `CALL_BOUNDARY`, the prior's margins
/// and cap, their route codes and their two arguments, last in the entry and the struct; the
/// fragments are the call interface's.
#[test]
fn the_prior_and_boundary_have_a_reviewed_outline() {
    let spec = topk_dsl::Spec::parse("prior=2/8,boundary=true").unwrap();
    insta::assert_snapshot!("persistent-prior", composition(&spec).unwrap().outline());
    let source = generate(&spec).unwrap().source;
    for needle in [
        "#define CALL_PRIOR 1",
        "#define CALL_BOUNDARY 1",
        "constexpr int PRIOR_PRIMARY_BINS = 2;",
        "constexpr int PRIOR_RESCUE_BINS = 8;",
        "constexpr int PRIOR_CAP = 8192;",
        "#define ROUTE_PRIOR_RESCUE 6",
        "const float* __restrict__ prior,",
        "float* __restrict__ boundary ",
    ] {
        assert!(source.contains(needle), "{needle}");
    }
    // Without them the prelude defines neither (the fragments' code for them compiles out).
    let plain = generate(&topk_dsl::Spec::parse("values=true").unwrap())
        .unwrap()
        .source;
    assert!(!plain.contains("#define CALL_PRIOR") && !plain.contains("#define ROUTE_PRIOR"));
    assert!(!plain.contains("#define CALL_BOUNDARY") && !plain.contains("prior,"));
}

/// 16-bit scores change only the prelude's score type (`score_t`, `SCORE_BITS`, `SCORE_BF16`),
/// the kernel's FP32 digits and the parameter types: the fragments are the FP32 spec's.
#[test]
fn sixteen_bit_scores_have_a_reviewed_outline() {
    for (name, text) in [
        ("persistent-f16", "dtype=f16"),
        (
            "persistent-bf16-call",
            "dtype=bf16,rows=window(relative),transform=paged,values=true,order=sorted,ties=lowest",
        ),
        (
            "staged-f16-call",
            "dtype=f16,map=staged,rows=decode,transform=offset,values=true",
        ),
    ] {
        let spec = topk_dsl::Spec::parse(text).unwrap();
        let outline = composition(&spec).unwrap().outline();
        let f32_spec = topk_dsl::Spec {
            dtype: topk_dsl::Dtype::F32,
            digits: topk_dsl::Spec::default().digits,
            ..spec
        };
        let fragments = |s: &topk_dsl::Spec| composition(s).unwrap().fragments;
        assert_eq!(fragments(&spec), fragments(&f32_spec), "{spec}");
        insta::assert_snapshot!(name, outline);
    }
}

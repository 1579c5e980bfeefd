//! Spec -> CUDA source of the context-parallel selector: one rank's stages over rows whose
//! positions are sharded across ranks (`cuda/sharded.cu`), plus the element-wise sum that
//! stands in for the all-reduce when the ranks are simulated on one device.
//!
//! The Spec's K, proposal (stride, rho, rescue), coarse bits and digits apply unchanged; the
//! row mapping is the stage grid of `sharded.cu`, so the Spec must use the persistent mapping
//! (the default for long rows).

use crate::family::{Family, Layout};
use crate::{constants, interface, spec_hash, CodegenError, Composition, CODEGEN_VERSION};
use topk_dsl::{Mapping, Spec};

/// Generated source of one rank's context-parallel stages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardedSource {
    pub spec: Spec,
    /// Entry point of the stages (`stage` is its first argument).
    pub entry: String,
    /// Entry point of the element-wise u32 sum (simulated all-reduce).
    pub sum_entry: String,
    pub threads: u32,
    /// Dynamic shared memory of the stage entry, bytes.
    pub dynamic_smem: u32,
    /// Candidate (key, position) pairs each rank keeps per row before it re-reads its shard.
    pub cands: u32,
    /// Histogram bins per row of each digit region (the reused histogram's size).
    pub hist_bins: u32,
    pub source: String,
}

/// Candidates kept per row and rank: the scores a sampled row admits at its rescue endpoint
/// (a few K in all, fewer per rank; the coarse bin at the endpoint can hold thousands more).
/// A rank whose row overflows it re-reads its shard in every later pass.
pub fn candidate_capacity(k: u32) -> u32 {
    (8 * k).max(16_384)
}

/// Histogram regions of the stages' digit passes: one per digit of the key the kernel refines
/// (`Spec::kernel_digits`: the float32 key's digits, for 16-bit scores too), then with
/// `ties=lowest` as many for the boundary key's position. The kernel (`DIGIT_REGIONS`) and the
/// host's workspace layout and stage chain both take the count from here.
pub fn digit_regions(spec: &Spec) -> usize {
    let lowest = usize::from(spec.io.ties == topk_dsl::Ties::Lowest);
    spec.kernel_digits().as_slice().len() * (1 + lowest)
}

/// Generate the context-parallel stages for `spec`. Same Spec -> same bytes.
pub fn generate_sharded(spec: &Spec) -> Result<ShardedSource, CodegenError> {
    let (mut stages, composition) = compose(spec)?;
    stages.source = composition.source();
    Ok(stages)
}

/// How [`generate_sharded`] puts the source of `spec` together.
pub fn composition(spec: &Spec) -> Result<Composition, CodegenError> {
    Ok(compose(spec)?.1)
}

/// The stages' facts (`source` left empty) and how their source is put together.
pub(crate) fn compose(spec: &Spec) -> Result<(ShardedSource, Composition), CodegenError> {
    spec.validate()?;
    crate::refuse_cpu_only(spec)?;
    if spec.view_run > 1 {
        return Err(CodegenError::Unsupported(format!(
            "{spec} (the context-parallel stages sample the stride view; use view=stride)"
        )));
    }
    if spec.stagger_us > 0 {
        return Err(CodegenError::Unsupported(format!(
            "{spec} (the context-parallel stages have no worker pool to stagger; remove stagger)"
        )));
    }
    if spec.tail_rows > 0 {
        return Err(CodegenError::Unsupported(format!(
            "{spec} (the context-parallel stages have no worker pool whose last rows to widen; \
             remove tail)"
        )));
    }
    if spec.prefetch > 0 {
        return Err(CodegenError::Unsupported(format!(
            "{spec} (the context-parallel stages stream without prefetch; remove prefetch)"
        )));
    }
    if spec.exact_below() > 0 {
        return Err(CodegenError::Unsupported(format!(
            "{spec} (the context-parallel stages sample every row with a usable view; remove \
             exact_below)"
        )));
    }
    if !matches!(spec.mapping, Mapping::Persistent | Mapping::Staged) {
        return Err(CodegenError::Unsupported(format!(
            "{spec} (the context-parallel selector takes K, the proposal and the digits from a \
             spec with map=persistent or map=staged)"
        )));
    }
    // The persistent family's constants: same proposal, same digits, same block primitives.
    // The shared memory, and so the frontier buffers' sizes, are the staged family's.
    let family = Family::Persistent;
    let staged = Layout::of(spec, Family::Staged);
    let layout = Layout {
        frontier_cap0: staged.frontier_cap0,
        frontier_cap1: staged.frontier_cap1,
        dynamic_smem: staged.dynamic_smem,
        // The copy stage's sort gathers its keys; nothing is staged beside the positions.
        sort_keys_staged: false,
        staging_words_per_cta: staged.staging_words_per_cta,
        ..Layout::of(spec, family)
    };
    let hash = spec_hash(spec);
    let entry = format!("topk_sharded_{hash}");
    let sum_entry = format!("topk_sharded_sum_{hash}");
    let cands = candidate_capacity(spec.k);
    let hist_bins = spec.hist_bins();
    let mut prelude = format!(
        "// Generated by topk-codegen {CODEGEN_VERSION}: exact sample-guided Top-K, one rank of a \
         context-parallel selector.\n// spec: {spec}\n\n"
    );
    prelude.push_str(&constants::emit(spec, family, &layout, &entry));
    prelude.push_str(&format!(
        "constexpr int CANDS = {cands};  // candidate pairs per row and rank\n#define SUM_ENTRY {sum_entry}\n"
    ));
    prelude.push_str(&format!(
        "constexpr int DIGIT_REGIONS = {};  // digit histograms: the key's, then the position's\n",
        digit_regions(spec)
    ));
    prelude.push_str(&interface::emit(Family::Staged, &spec.io));
    let stages = ShardedSource {
        spec: *spec,
        entry,
        sum_entry,
        threads: spec.threads,
        dynamic_smem: layout.dynamic_smem,
        cands,
        hist_bins,
        source: String::new(),
    };
    let fragments = Family::Staged.parts(spec);
    Ok((stages, Composition { prelude, fragments }))
}

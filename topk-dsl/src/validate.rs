//! The rules a Spec must satisfy. Each rule is one function whose doc comment says why it holds;
//! errors name the field with the key of the text form (`k`, `map`, `stride`, ...).

use crate::{Centi, Digits, Dtype, Mapping, Prior, Proposal, Spec, SpecError, MAX_K};

/// Block sizes the kernels are written for.
const THREADS: [u32; 5] = [128, 256, 384, 512, 1024];
/// Largest ratio `rho` or `rescue` may take.
const MAX_RATIO: Centi = Centi(800);
/// Longest late start of half a persistent pool, microseconds (a row pass takes 30-250 us).
const MAX_STAGGER_US: u16 = 1000;
/// Most rows a tail margin may cover (a pool is at most a few CTAs per SM of a device).
const MAX_TAIL_ROWS: u32 = 1 << 16;
/// Most row-stream batches sent to L2 ahead (two batches of every worker of a pool are about
/// half of an H200's 50 MB L2).
const MAX_PREFETCH: u8 = 2;
/// Most coarse bins a prior's cutoff or rescue band may reach below the prior's bin (a quarter
/// of an 11-bit key's bins: far beyond any useful prior, whose row then starts again).
const MAX_PRIOR_BINS: u8 = 64;

impl Spec {
    /// Check every rule; the first broken one is returned, naming the field (or the two fields
    /// that cannot be combined) and what to change. Single-field rules are checked first:
    ///
    /// | field     | rule                                                         |
    /// |-----------|--------------------------------------------------------------|
    /// | `k`       | `1..=16384` ([`MAX_K`])                                      |
    /// | `dtype`   | `f32`, `f16`, `bf16`                                         |
    /// | `threads` | one of 128, 256, 384, 512, 1024                              |
    /// | `coarse`  | `8..=12` bits                                                |
    /// | `digits`  | 3 or 4 widths (f32) or 2 to 4 (f16, bf16), each `1..=12`, summing to the key width (32 or 16) |
    /// | `map`     | `kvsplit(2\|4\|8)`, `cluster(8\|16)` (`persistent`, `rowlocal(..)`, `staged` as they are) |
    /// | `stride`  | a power of two in `2..=1024`                                 |
    /// | `rho`     | `1.0..=8.0`                                                  |
    /// | `rescue`  | greater than `rho`, at most `8.0`                            |
    /// | `exact_below` | at most 2^31 - 1                                         |
    /// | `stagger` | at most 1000 microseconds                                    |
    /// | `tail`    | `RHO@ROWS`: ROWS in `1..=65536`, RHO greater than `rho`, below `rescue`, at most `8.0` |
    /// | `prefetch` | at most 2 batches                                           |
    /// | `prior`   | `P/R` with `P <= R <= 64` coarse bins                        |
    ///
    /// then the combinations: `rowlocal` needs `propose=exact` and `threads=1024`; `cluster`
    /// needs `threads=512` or `1024`; `threads=384` needs `map=persistent`, `k <= 2048` and
    /// `coarse <= 11`; `kvsplit` needs a sampled proposal; `exact_below` and `stagger` need
    /// `map=persistent`; `tail` needs `map=persistent` and a sampled proposal; `prefetch` needs
    /// `map=persistent`. The interface fields ([`crate::Io`]) combine freely; which of them
    /// the GPU kernels generate is [`Spec::gpu_unsupported`].
    pub fn validate(&self) -> Result<(), SpecError> {
        check_k(self.k)?;
        check_dtype(self.dtype)?;
        check_threads(self.threads)?;
        check_coarse(self.coarse_bits)?;
        check_digits(&self.digits, self.dtype)?;
        check_mapping(self.mapping)?;
        check_proposal(self.proposal)?;
        check_mapping_proposal(self.mapping, self.proposal)?;
        check_mapping_threads(self.mapping, self.threads)?;
        check_three_ctas_fit(self.threads, self.k, self.coarse_bits)?;
        check_exact_below(self.mapping, self.proposal)?;
        check_view(self.view_run, self.mapping, self.proposal)?;
        check_stagger(self.stagger_us, self.mapping)?;
        check_tail(self.tail_rows, self.tail_rho, self.mapping, self.proposal)?;
        check_prefetch(self.prefetch, self.mapping)?;
        check_prior(self.io.prior)
    }
}

/// `k` is in `1..=MAX_K`: a rank of zero selects nothing, and the kernels size their on-chip
/// frontier and output staging for at most `MAX_K` indices per row.
fn check_k(k: u32) -> Result<(), SpecError> {
    if (1..=MAX_K).contains(&k) {
        Ok(())
    } else {
        Err(SpecError::invalid(
            "k",
            format!("must be in 1..={MAX_K}, got {k}"),
        ))
    }
}

/// Every dtype the enum can hold is selectable (the GPU kernels generate f32 so far:
/// [`Spec::gpu_unsupported`]); a new dtype must decide its rules here.
fn check_dtype(dtype: Dtype) -> Result<(), SpecError> {
    match dtype {
        Dtype::F32 | Dtype::F16 | Dtype::Bf16 => Ok(()),
    }
}

/// `threads` is 128, 256, 384, 512 or 1024: whole warps (the block primitives scan at most 32
/// warp sums), and at most the CUDA limit of 1024 threads per block. 384 is three CTAs per SM
/// for the persistent pool (see `check_mapping_threads`).
fn check_threads(threads: u32) -> Result<(), SpecError> {
    if THREADS.contains(&threads) {
        Ok(())
    } else {
        Err(SpecError::invalid(
            "threads",
            format!("must be one of 128, 256, 384, 512 or 1024, got {threads}"),
        ))
    }
}

/// `coarse` is in `8..=12` bits of the 16-bit FP16 key: with fewer bins the boundary bin is too
/// wide to leave a compact tail; with more, the histogram (2^bits counters) no longer fits in
/// shared memory beside the candidate state.
fn check_coarse(bits: u8) -> Result<(), SpecError> {
    if (8..=12).contains(&bits) {
        Ok(())
    } else {
        Err(SpecError::invalid(
            "coarse",
            format!("must be in 8..=12 bits, got {bits}"),
        ))
    }
}

/// `digits` are 3 or 4 widths for the FP32 key and 2 to 4 for a 16-bit key, each `1..=12` bits,
/// summing to the key's width: refinement must resolve the whole ordered key, a width of 12
/// (4096 counters) is the largest histogram that fits in shared memory (so a 16-bit key takes
/// at least two digits), and unused slots of the fixed array are zero so equal digit lists
/// compare equal.
fn check_digits(digits: &Digits, dtype: Dtype) -> Result<(), SpecError> {
    let len = digits.len as usize;
    let bits = dtype.key_bits();
    let widths = if bits == 32 { 3..=4 } else { 2..=4 };
    if !widths.contains(&len) {
        return Err(SpecError::invalid(
            "digits",
            format!(
                "must have {} to {} widths for dtype={dtype}, got {len}",
                widths.start(),
                widths.end()
            ),
        ));
    }
    let (used, unused) = digits.widths.split_at(len);
    if unused.iter().any(|&w| w != 0) {
        return Err(SpecError::invalid(
            "digits",
            format!(
                "slots after the {len} used widths must be zero, got {:?}",
                digits.widths
            ),
        ));
    }
    if let Some(w) = used.iter().find(|w| !(1..=12).contains(*w)) {
        return Err(SpecError::invalid(
            "digits",
            format!("each width must be in 1..=12 bits, got {w} in {digits}"),
        ));
    }
    let sum: u32 = used.iter().map(|&w| u32::from(w)).sum();
    match (sum == bits, dtype) {
        (true, _) => Ok(()),
        (false, Dtype::F32) => Err(SpecError::invalid(
            "digits",
            format!("widths must sum to 32 (the FP32 key), got {digits} = {sum}"),
        )),
        (false, _) => Err(SpecError::conflict(
            "digits",
            "dtype",
            format!(
                "widths must sum to 16 (the key of dtype={dtype}), got {digits} = {sum}; leave \
                 digits out for the 16-bit default (coarse width + the rest: {} at coarse=11)",
                Digits::default_for(dtype, 11)
            ),
        )),
    }
}

/// `kvsplit` uses 2, 4 or 8 CTAs per row (paper §5.5: a power of two keeps segments aligned and
/// the finisher's reduction balanced); `cluster` uses 8 CTAs (the portable cluster size) or 16
/// (the largest non-portable size on Hopper, launched with that attribute set).
fn check_mapping(mapping: Mapping) -> Result<(), SpecError> {
    match mapping {
        Mapping::KvSplit { splits } if ![2, 4, 8].contains(&splits) => Err(SpecError::invalid(
            "map",
            format!("kvsplit takes 2, 4 or 8 CTAs per row, got kvsplit({splits})"),
        )),
        Mapping::Cluster { ctas } if ctas != 8 && ctas != 16 => Err(SpecError::invalid(
            "map",
            format!("cluster takes 8 or 16 CTAs per row, got cluster({ctas})"),
        )),
        _ => Ok(()),
    }
}

/// A sampled proposal (paper §4.2):
/// - `stride` is a power of two in `2..=1024`: the row phase `(17 r + 13) mod s` permutes the
///   residues only for powers of two; stride 1 is the whole row (use `propose=exact`), and
///   beyond 1024 the view is too sparse to calibrate the boundary.
/// - `rho` is in `1.0..=8.0`: a target rank below `k` underfills by construction, and beyond
///   `8 k` the admitted frontier outgrows the candidate budget.
/// - `rescue` is greater than `rho` and at most `8.0`: the secondary boundary is nested strictly
///   deeper than the primary one (eq. 18-19), under the same budget.
fn check_proposal(proposal: Proposal) -> Result<(), SpecError> {
    let Proposal::Sampled {
        stride,
        rho,
        rescue,
        exact_below,
    } = proposal
    else {
        return Ok(());
    };
    if !(stride.is_power_of_two() && (2..=1024).contains(&stride)) {
        return Err(SpecError::invalid(
            "stride",
            format!("must be a power of two in 2..=1024, got {stride}"),
        ));
    }
    if exact_below > i32::MAX as u32 {
        return Err(SpecError::invalid(
            "exact_below",
            format!("is a row length, at most {}, got {exact_below}", i32::MAX),
        ));
    }
    if !(Centi(100)..=MAX_RATIO).contains(&rho) {
        return Err(SpecError::invalid(
            "rho",
            format!("must be in 1.0..=8.0 (a target rank of rho * k), got {rho}"),
        ));
    }
    match rescue {
        Some(rescue) if rescue <= rho => Err(SpecError::conflict(
            "rescue",
            "rho",
            format!(
                "rescue must be greater than rho (the secondary target lies deeper), got \
                 rescue={rescue} <= rho={rho}; raise rescue or leave it out"
            ),
        )),
        Some(rescue) if rescue > MAX_RATIO => Err(SpecError::invalid(
            "rescue",
            format!("must be at most 8.0, got {rescue}"),
        )),
        _ => Ok(()),
    }
}

/// Row-local mappings are the direct-exact kernels (paper §5.5): they build the exact coarse
/// boundary from the whole row, so they take `propose=exact`. KV-split is the sampled mapping:
/// every segment CTA rebuilds the same row view, so it takes a sampled proposal. Cluster
/// mappings take either (a sampled cluster sums its CTAs' view histograms).
fn check_mapping_proposal(mapping: Mapping, proposal: Proposal) -> Result<(), SpecError> {
    match (mapping, proposal) {
        (Mapping::RowLocal(_), Proposal::Sampled { .. }) => Err(SpecError::conflict(
            "propose",
            "map",
            format!("map={mapping} builds the exact coarse boundary; set propose=exact"),
        )),
        (Mapping::KvSplit { .. }, Proposal::Exact) => Err(SpecError::conflict(
            "propose",
            "map",
            format!(
                "map={mapping} shares a sampled view between segments; set \
                 propose=sampled(...) or use map=persistent for an exact proposal"
            ),
        )),
        _ => Ok(()),
    }
}

/// Row-local kernels run one 1024-thread CTA per row, the width the paper's row-local exact path
/// is written for (§5.5); they take `threads=1024`. Cluster CTAs take 1024 threads (one per SM)
/// or 512 (two per SM, twice as many clusters resident). 384-thread CTAs (three per SM, which
/// keeps more rows in flight on calls of many rows up to 128K) are sized for the persistent
/// pool alone: its shared frontier fits three times on an SM.
fn check_mapping_threads(mapping: Mapping, threads: u32) -> Result<(), SpecError> {
    match mapping {
        Mapping::KvSplit { .. } | Mapping::Staged if threads == 384 => Err(SpecError::conflict(
            "threads",
            "map",
            format!("threads=384 is written for map=persistent only; use 256 or 512 for map={mapping}"),
        )),
        Mapping::RowLocal(_) if threads != 1024 => Err(SpecError::conflict(
            "threads",
            "map",
            format!("map={mapping} runs 1024-thread CTAs; set threads=1024, got {threads}"),
        )),
        Mapping::Cluster { .. } if threads != 1024 && threads != 512 => Err(SpecError::conflict(
            "threads",
            "map",
            format!("map={mapping} runs 512- or 1024-thread CTAs; set threads=512 or 1024, got {threads}"),
        )),
        _ => Ok(()),
    }
}

/// `threads=384` is three CTAs per SM, and its launch bounds give each thread the registers of
/// that occupancy (56): the CTA's shared memory must fit three times in an SM's 228 KB. It does
/// with the 4096-pair frontier of K <= 2048 and the 2048-bin histogram of `coarse <= 11`
/// (74 KB); a larger K doubles the frontier and `coarse=12` doubles the histogram.
fn check_three_ctas_fit(threads: u32, k: u32, coarse: u8) -> Result<(), SpecError> {
    if threads != 384 {
        Ok(())
    } else if k > 2048 {
        Err(SpecError::conflict(
            "threads",
            "k",
            format!("threads=384 runs three CTAs per SM, whose shared memory fits at k <= 2048; use threads=512 for k={k}"),
        ))
    } else if coarse > 11 {
        Err(SpecError::conflict(
            "threads",
            "coarse",
            format!("threads=384 runs three CTAs per SM, whose shared memory fits at coarse <= 11; use threads=512 for coarse={coarse}"),
        ))
    } else {
        Ok(())
    }
}

/// `exact_below` (rows shorter than it take the exact coarse boundary instead of the view) is
/// written for the persistent pool, whose rows of many lengths share one kernel; the cluster,
/// KV-split and stage kernels serve long rows, where the view always pays.
fn check_exact_below(mapping: Mapping, proposal: Proposal) -> Result<(), SpecError> {
    match proposal {
        Proposal::Sampled { exact_below, .. }
            if exact_below > 0 && mapping != Mapping::Persistent =>
        {
            Err(SpecError::conflict(
                "exact_below",
                "map",
                format!("exact_below applies to map=persistent only; remove it for map={mapping}"),
            ))
        }
        _ => Ok(()),
    }
}

/// `view=run(R)`: R in {1, 2, 4, 8} (a group is at most one 32-byte sector and stays inside one
/// aligned vector load), and R > 1 only where a view exists: a sampled proposal on the
/// persistent, KV-split or cluster mapping.
fn check_view(run: u8, mapping: Mapping, proposal: Proposal) -> Result<(), SpecError> {
    if ![1, 2, 4, 8].contains(&run) {
        return Err(SpecError::invalid(
            "view",
            format!("run(R) takes R in 1, 2, 4 or 8, got run({run})"),
        ));
    }
    if run > 1 {
        if !matches!(proposal, Proposal::Sampled { .. }) {
            return Err(SpecError::invalid(
                "view",
                "run(R) groups the samples of a sampled proposal; propose=exact has no view",
            ));
        }
        if !matches!(
            mapping,
            Mapping::Persistent | Mapping::KvSplit { .. } | Mapping::Cluster { .. }
        ) {
            return Err(SpecError::invalid(
                "view",
                "run(R) needs map=persistent, kvsplit(..) or cluster(..) (map=staged samples the \
                 stride view only; the row-local mappings do not sample)",
            ));
        }
    }
    Ok(())
}

/// `stagger` (microseconds, at most `MAX_STAGGER_US`) delays half of a persistent worker pool;
/// the other mappings have no pool to stagger.
fn check_stagger(us: u16, mapping: Mapping) -> Result<(), SpecError> {
    if us > MAX_STAGGER_US {
        return Err(SpecError::invalid(
            "stagger",
            format!("must be at most {MAX_STAGGER_US} microseconds, got {us}"),
        ));
    }
    if us > 0 && mapping != Mapping::Persistent {
        return Err(SpecError::conflict(
            "stagger",
            "map",
            format!("stagger delays half of a persistent worker pool; remove it for map={mapping}"),
        ));
    }
    Ok(())
}

/// `prefetch` (row-stream batches sent to L2 ahead, at most `MAX_PREFETCH`) is a setting of the
/// persistent pool's streams, the only ones it was measured on.
fn check_prefetch(batches: u8, mapping: Mapping) -> Result<(), SpecError> {
    if batches > MAX_PREFETCH {
        return Err(SpecError::invalid(
            "prefetch",
            format!("sends at most {MAX_PREFETCH} batches ahead, got {batches}"),
        ));
    }
    if batches > 0 && mapping != Mapping::Persistent {
        return Err(SpecError::conflict(
            "prefetch",
            "map",
            format!("prefetch is a setting of a persistent pool's row streams; remove it for map={mapping}"),
        ));
    }
    Ok(())
}

/// `tail=RHO@ROWS` widens the margin of the rows a persistent pool claims last, so it needs a
/// pool and a sampled margin to widen: RHO above `rho` (else it would not widen it) and below
/// `rescue` (the band rescue's endpoint must stay the lower one), ROWS in `1..=MAX_TAIL_ROWS`.
fn check_tail(
    rows: u32,
    tail_rho: Centi,
    mapping: Mapping,
    proposal: Proposal,
) -> Result<(), SpecError> {
    if rows == 0 {
        if tail_rho != Centi(0) {
            return Err(SpecError::invalid(
                "tail",
                "a tail margin needs its row count: tail=RHO@ROWS with ROWS >= 1",
            ));
        }
        return Ok(());
    }
    if rows > MAX_TAIL_ROWS {
        return Err(SpecError::invalid(
            "tail",
            format!("covers at most {MAX_TAIL_ROWS} rows, got {rows}"),
        ));
    }
    if mapping != Mapping::Persistent {
        return Err(SpecError::conflict(
            "tail",
            "map",
            format!("tail widens the margin of a persistent pool's last rows; remove it for map={mapping}"),
        ));
    }
    let Proposal::Sampled { rho, rescue, .. } = proposal else {
        return Err(SpecError::conflict(
            "tail",
            "propose",
            "tail widens a sampled proposal's margin; propose=exact has none",
        ));
    };
    if tail_rho > MAX_RATIO {
        return Err(SpecError::invalid(
            "tail",
            format!("the tail margin must be at most {MAX_RATIO}, got {tail_rho}"),
        ));
    }
    if tail_rho <= rho {
        return Err(SpecError::conflict(
            "tail",
            "rho",
            format!("the tail margin must be greater than rho ({rho}) to widen it, got {tail_rho}"),
        ));
    }
    if let Some(rescue) = rescue.filter(|&r| tail_rho >= r) {
        return Err(SpecError::conflict(
            "tail",
            "rescue",
            format!("the tail margin must be below rescue ({rescue}), got {tail_rho}"),
        ));
    }
    Ok(())
}

/// `prior=P/R`: the cutoff P coarse bins below a row's prior bin and the rescue band's end R
/// bins below it, `P <= R` (the band lies below the cutoff; R = P: no band) and at most
/// `MAX_PRIOR_BINS`.
fn check_prior(prior: Prior) -> Result<(), SpecError> {
    match prior {
        Prior::Bins { primary, rescue } if primary > rescue || rescue > MAX_PRIOR_BINS => {
            Err(SpecError::invalid(
                "prior",
                format!(
                    "P/R needs P <= R <= {MAX_PRIOR_BINS} coarse bins (R = P: no rescue band), \
                     got {primary}/{rescue}"
                ),
            ))
        }
        _ => Ok(()),
    }
}

//! Kernel families and the launch facts each one implies.
use topk_dsl::{Mapping, Proposal, RowLocalVariant, Spec};

const KEYS: &str = include_str!("cuda/keys.cu");
const MEMORY: &str = include_str!("cuda/memory.cu");
const BLOCK: &str = include_str!("cuda/block.cu");
const ROW: &str = include_str!("cuda/row.cu");
const PROPOSE: &str = include_str!("cuda/propose.cu");
const PROPOSE_RUNS: &str = include_str!("cuda/propose_runs.cu");
const CERTIFY: &str = include_str!("cuda/certify.cu");
const REFINE: &str = include_str!("cuda/refine.cu");
const SELECT: &str = include_str!("cuda/select.cu");
const PERSISTENT: &str = include_str!("cuda/persistent.cu");
const ROWLOCAL: &str = include_str!("cuda/rowlocal.cu");
const KVSPLIT: &str = include_str!("cuda/kvsplit.cu");
const CLUSTER: &str = include_str!("cuda/cluster.cu");

/// A family of generated kernels: same body, different row ownership.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Persistent worker pool, one CTA per row, sampled or exact proposal.
    Persistent,
    /// One CTA per row with the row held in registers (short rows).
    RowLocalRegister,
    /// One CTA per row, streamed from global memory.
    RowLocalStreaming,
    /// `splits` CTAs per row on disjoint segments, the last to arrive finishes the row.
    KvSplit { splits: u8 },
    /// A thread-block cluster of `ctas` CTAs per row, exact boundary combined in DSMEM.
    Cluster { ctas: u8 },
}

impl Family {
    pub fn of(spec: &Spec) -> Option<Family> {
        match spec.mapping {
            Mapping::Persistent => Some(Family::Persistent),
            Mapping::RowLocal(RowLocalVariant::Register) => Some(Family::RowLocalRegister),
            Mapping::RowLocal(RowLocalVariant::Streaming) => Some(Family::RowLocalStreaming),
            Mapping::KvSplit { splits } => Some(Family::KvSplit { splits }),
            Mapping::Cluster { ctas } => Some(Family::Cluster { ctas }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::Persistent => "persistent",
            Family::RowLocalRegister => "rowlocal_register",
            Family::RowLocalStreaming => "rowlocal_streaming",
            Family::KvSplit { splits: 2 } => "kvsplit2",
            Family::KvSplit { splits: 4 } => "kvsplit4",
            Family::KvSplit { .. } => "kvsplit8",
            Family::Cluster { .. } => "cluster8",
        }
    }

    /// Whether kernels of this family have been run and checked on a GPU. The planner refuses
    /// the others unless asked explicitly (`PlanRequest::allow_unverified`), so a kernel that only compiled
    /// can never be picked silently.
    /// Every family generated today passed the GPU test suite (bench/RESULTS.md).
    pub fn verified_on_gpu(self) -> bool {
        match self {
            Family::Persistent
            | Family::RowLocalRegister
            | Family::RowLocalStreaming
            | Family::KvSplit { .. }
            | Family::Cluster { .. } => true,
        }
    }

    /// The CUDA building blocks of this family for `spec`, in order (a grouped view swaps the
    /// proposal block).
    pub(crate) fn parts(self, spec: &Spec) -> [&'static str; 10] {
        let propose = if spec.view_run > 1 {
            PROPOSE_RUNS
        } else {
            PROPOSE
        };
        let mapping = match self {
            Family::Persistent => PERSISTENT,
            Family::RowLocalRegister | Family::RowLocalStreaming => ROWLOCAL,
            Family::KvSplit { .. } => KVSPLIT,
            Family::Cluster { .. } => CLUSTER,
        };
        [
            KEYS, MEMORY, BLOCK, ROW, propose, CERTIFY, REFINE, SELECT, mapping, "",
        ]
    }
}

/// Launch facts of a generated kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub threads: u32,
    /// CTAs per SM the kernel is compiled for (`__launch_bounds__` minimum blocks).
    pub min_blocks: u32,
    /// Shared (key, index) frontier capacity per ping-pong buffer.
    pub frontier_cap: u32,
    /// Dynamic shared memory per CTA, bytes.
    pub dynamic_smem: u32,
    /// Longest row the kernel accepts (register tile), if bounded.
    pub max_row: Option<u32>,
    /// Whether the kernel is a persistent pool (needs the control counters zeroed once).
    pub persistent: bool,
    /// Spill pairs per worker and buffer the kernel requires (KV-split: SEG_CAP - CAP), if fixed.
    pub fixed_spill_cap: Option<u32>,
    /// Workspace words per CTA beyond the spill slices (KV-split staging and slot words).
    pub staging_words_per_cta: u32,
    /// CTAs that share one row (KV-split segments), 1 otherwise.
    pub ctas_per_row: u32,
}

/// Staged (key, index) pairs per KV-split segment.
pub const SEGMENT_CAP: u32 = 8192;

/// Scores per thread held in registers by the register row-local family.
pub const REGISTER_ITEMS: u32 = 16;
/// Words of block scratch + counters ahead of the frontiers (keep in sync with block.cu).
pub(crate) const SCRATCH_AND_COUNTERS: u32 = 40 + 8;

impl Layout {
    pub fn of(spec: &Spec, family: Family) -> Layout {
        // Shared frontier pairs per buffer: room for the ~1.5K-2.5K admitted candidates of a
        // K = 2048 row at 512+ threads; 256-thread CTAs keep half so four fit on an SM (the
        // rest continues in the global spill slice). Larger K gets a larger tile.
        let frontier_cap = match (spec.k, spec.threads) {
            (k, _) if k > 2048 => 8192,
            (_, t) if t <= 256 => 2048,
            _ => 4096,
        };
        let hist_bins = spec.coarse_bins().max(spec.digit_bins());
        let dynamic_smem = (hist_bins + SCRATCH_AND_COUNTERS + 4 * frontier_cap) * 4;
        // 1024 threads per SM at up to 64 registers each: two 512-thread CTAs measured faster
        // than three at 40 registers (which spilled), bench/RESULTS.md.
        let min_blocks = (1024 / spec.threads).max(1);
        Layout {
            threads: spec.threads,
            min_blocks,
            frontier_cap,
            dynamic_smem,
            max_row: (family == Family::RowLocalRegister).then_some(REGISTER_ITEMS * spec.threads),
            persistent: matches!(family, Family::Persistent | Family::KvSplit { .. }),
            fixed_spill_cap: match family {
                Family::KvSplit { .. } => Some(SEGMENT_CAP.saturating_sub(frontier_cap)),
                _ => None,
            },
            staging_words_per_cta: match family {
                Family::KvSplit { splits } => splits as u32 * 2 * SEGMENT_CAP + 2 + splits as u32,
                _ => 0,
            },
            ctas_per_row: match family {
                Family::KvSplit { splits } => splits as u32,
                Family::Cluster { ctas } => ctas as u32,
                _ => 1,
            },
        }
    }
}

/// Whether the family samples: the persistent and KV-split families honour a sampled proposal.
pub(crate) fn samples(spec: &Spec, family: Family) -> bool {
    matches!(family, Family::Persistent | Family::KvSplit { .. })
        && matches!(spec.proposal, Proposal::Sampled { .. })
}

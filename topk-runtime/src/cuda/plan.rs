//! The planner: (K, dtype, M_cap, N, pitch, device) -> a Plan fixed before graph capture.
//!
//! A Plan names the generated kernel, its grid, block and shared memory, and the workspace it
//! needs. The live row count and the valid lengths stay device inputs, so one Plan serves every
//! replay of a captured graph.

use super::build::{choose_and_build, Built, Choice};
use super::device::{Gpu, Loaded};
use crate::{Error, Result};
use topk_codegen::{Family, KernelSource};
use topk_dsl::{Spec, MAX_K};

/// What a caller plans for: capacities, not live values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanRequest {
    /// Indices selected per row.
    pub k: u32,
    /// Rows the buffers can hold (`M_cap`); fewer may be live at each call.
    pub m_cap: u32,
    /// Allocated row width `N`: every valid length is in `0..=N`.
    pub width: u32,
    /// Row pitch of the score matrix in elements, `>= width`.
    pub pitch: u64,
    /// Row pitch of the output in elements, `>= k`.
    pub out_pitch: u64,
    /// A Spec to use instead of the default map.
    pub spec: Option<Spec>,
    /// Build the persistent or cluster kernel with phase timers ([`topk_codegen::probe`]): the |Q0| words of
    /// the route info then carry per-row phase times instead of candidate counts. For finding
    /// where time goes; never for timing the selector itself.
    pub phase_probe: bool,
    /// Plan kernels that compile but have not yet been checked on a GPU, which
    /// [`gpu_refusal`](super::gpu_refusal) otherwise refuses ([`HELD_BACK`](super::HELD_BACK)):
    /// for the GPU tests that check them against the CPU backend.
    pub allow_unverified: bool,
}

impl PlanRequest {
    /// A request for `k` of rows `width` wide, `m_cap` rows at most, dense pitches, the
    /// planner's choice of spec.
    pub fn new(k: u32, m_cap: u32, width: u32) -> Self {
        PlanRequest {
            k,
            m_cap,
            width,
            pitch: width as u64,
            out_pitch: k as u64,
            spec: None,
            phase_probe: false,
            allow_unverified: false,
        }
    }

    /// The request with `spec` given instead of the planner's choice.
    pub fn with_spec(mut self, spec: Spec) -> Self {
        self.spec = Some(spec);
        self
    }

    fn check(&self) -> Result<()> {
        if self.k == 0 || self.k > MAX_K {
            return Err(Error::K {
                k: self.k as usize,
                why: format!("K must be in 1..={MAX_K}"),
            });
        }
        if self.width == 0 || self.width > MAX_WIDTH {
            return Err(Error::Input(format!(
                "width {} must be in 1..={MAX_WIDTH} (int32 indices, with headroom for the \
                 kernels' segment arithmetic)",
                self.width
            )));
        }
        if self.pitch < self.width as u64 {
            return Err(Error::Input(format!(
                "row pitch {} is smaller than the width {}",
                self.pitch, self.width
            )));
        }
        if self.out_pitch < self.k as u64 {
            return Err(Error::Input(format!(
                "output pitch {} is smaller than K = {}",
                self.out_pitch, self.k
            )));
        }
        Ok(())
    }
}

/// Where a Plan's Spec came from.
#[derive(Clone, Debug, PartialEq)]
pub enum SpecSource {
    /// The caller gave it.
    Given,
    /// The autotune store's fastest exact candidate for this device and shape bucket.
    Tuned,
    /// The default map; no autotune record for this device and bucket.
    Default,
    /// The default map; an autotune record was ignored for the reason given (a warning).
    DefaultIgnoring(String),
}

/// A planned selector: the generated kernel, loaded, and its launch geometry.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What was planned for.
    pub request: PlanRequest,
    /// The spec chosen, with every device adjustment made.
    pub spec: Spec,
    /// Its generated source and entry point.
    pub kernel: KernelSource,
    /// The compiled module, loaded on the device.
    pub loaded: Loaded,
    /// CTAs launched (a `map=staged` plan: position chunks per row).
    pub grid: u32,
    /// Threads per CTA.
    pub block: u32,
    /// Dynamic shared memory per CTA, bytes.
    pub smem: u32,
    /// Frontier spill capacity per worker and ping-pong buffer, in (key, index) pairs.
    pub spill_cap: u32,
    /// Bytes of the workspace: control words + per-worker spill slices.
    pub workspace_bytes: u64,
    /// CTAs resident per SM, from the occupancy calculator.
    pub ctas_per_sm: u32,
    /// Where the spec came from.
    pub source: SpecSource,
    /// The stage chain of a `map=staged` plan (`grid` is then its position chunks per row);
    /// `None` for the single-kernel families.
    pub stages: Option<StagedLayout>,
}

/// How a `map=staged` plan splits its rows: position chunks per row, scores per chunk, and the
/// workspace regions of the stage chain (one rank of `sharded.cu`).
#[derive(Clone, Debug)]
pub struct StagedLayout {
    /// Position chunks per row.
    pub chunks: u32,
    /// Scores per chunk.
    pub chunk_len: u32,
    pub(crate) regions: super::sharded::stages::Regions,
    /// The call's stages in order, fixed by the plan.
    pub(crate) steps: Vec<super::sharded::stages::Step>,
}

/// Widest row a plan accepts: int32 indices, less 1024 so that rounding a length up to a
/// segment or stride multiple stays below 2^31 in the kernels.
pub const MAX_WIDTH: u32 = i32::MAX as u32 - 1023;

/// Words of the control block: work cursor, exit counter, status, padding.
pub const CONTROL_WORDS: usize = 4;
/// Upper bound of the per-worker spill slice; larger frontiers are re-read from the row.
const MAX_SPILL: u32 = 16_384;

/// Spill pairs per worker and buffer, and the workspace bytes, of a kernel with `layout` over
/// rows of `width` scores on `grid` CTAs. A frontier refines on chip when it fits frontier
/// buffer 1 plus the spill (CAP1 + spill), so the spill follows the width from CAP1. KV-split
/// fixes the spill at SEG_CAP - CAP1: its finisher copies the staged pairs only when the whole
/// row fits CAP1 + spill, which then implies that no segment overflowed its staging. Never
/// grows with the number of rows.
pub fn workspace_size(layout: &topk_codegen::Layout, width: u32, grid: u32) -> (u32, u64) {
    let spill_cap = layout
        .fixed_spill_cap
        .unwrap_or_else(|| width.saturating_sub(layout.frontier_cap1).min(MAX_SPILL));
    let per_cta = 4 * spill_cap as u64 + layout.staging_words_per_cta as u64;
    (
        spill_cap,
        (CONTROL_WORDS as u64 + grid as u64 * per_cta) * 4,
    )
}

impl Plan {
    /// Plans `request` on `gpu`: chooses the Spec (given; else the autotune store's record for
    /// this device and shape bucket, see [`crate::autotune`]; else the default map), generates,
    /// compiles (through the caches) and sizes the grid and workspace.
    ///
    /// ```no_run
    /// use topk_runtime::cuda::{Gpu, Plan, PlanRequest, SpecSource};
    ///
    /// # fn main() -> topk_runtime::Result<()> {
    /// let gpu = Gpu::open(0)?;
    /// // Capacities: K = 2048, up to 4096 rows of 256K scores; live lengths and the live row
    /// // count stay device inputs of each launch.
    /// let plan = Plan::new(&gpu, PlanRequest::new(2048, 4096, 262_144))?;
    /// println!("{} ({:?}): {} CTAs, {} bytes of workspace", plan.spec, plan.source, plan.grid,
    ///     plan.workspace_bytes);
    /// assert!(matches!(plan.source, SpecSource::Default | SpecSource::Tuned
    ///     | SpecSource::DefaultIgnoring(_)));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::K`] or [`Error::Input`] for a request out of range (K, width, pitches);
    /// [`Error::Spec`] or [`Error::Codegen`] for a spec the kernels cannot run;
    /// [`Error::Compile`], [`Error::Cache`] or [`Error::Cuda`] when building or loading fails.
    pub fn new(gpu: &Gpu, request: PlanRequest) -> Result<Plan> {
        let store = match crate::autotune::Store::default_path() {
            Some(path) => crate::autotune::Store::load(&path).ok(),
            None => None,
        };
        Plan::with_store(gpu, request, store.as_ref())
    }

    /// [`Plan::new`] with an explicit autotune store (`None`: default map only). The spec is
    /// chosen with every device adjustment made ([`crate::policy`] on [`Gpu::facts`]), then
    /// compiled once; a second compile only where the device contradicts its facts (the
    /// occupancy calculator or the driver's cluster count for the loaded kernel).
    pub fn with_store(
        gpu: &Gpu,
        request: PlanRequest,
        store: Option<&crate::autotune::Store>,
    ) -> Result<Plan> {
        request.check()?;
        if !request.allow_unverified {
            if let Some(why) = request.spec.as_ref().and_then(super::gpu_refusal) {
                return Err(Error::Input(why));
            }
        }
        let (choice, built) = choose_and_build(gpu, &request, store)?;
        if built.kernel.family == Family::Staged {
            return staged_plan(gpu, request, choice, built);
        }
        let grid = grid(gpu, &request, &built);
        let (spill_cap, workspace_bytes) =
            workspace_size(&built.kernel.layout, request.width, grid);
        Ok(Plan {
            request,
            spec: choice.spec,
            grid,
            block: built.kernel.layout.threads,
            smem: built.kernel.layout.dynamic_smem,
            spill_cap,
            workspace_bytes,
            ctas_per_sm: built.ctas_per_sm,
            source: choice.source,
            stages: None,
            kernel: built.kernel,
            loaded: built.loaded,
        })
    }

    /// The kernel family of the chosen spec.
    pub fn family(&self) -> Family {
        self.kernel.family
    }
}

/// CTAs of a single-kernel plan: one cluster per row (rows loop inside), as many whole clusters
/// as are resident at once (the driver's count when it gives one); else one CTA per row, as
/// many as are resident.
fn grid(gpu: &Gpu, request: &PlanRequest, built: &Built) -> u32 {
    let sms = gpu.props().sms;
    match built.kernel.family {
        Family::Cluster { ctas } => {
            let ctas = ctas as u32;
            let resident = built.clusters.unwrap_or(sms * built.ctas_per_sm / ctas);
            resident.max(1).min(request.m_cap.max(1)) * ctas
        }
        _ => (sms * built.ctas_per_sm).min(request.m_cap.max(1)),
    }
}

/// A `map=staged` plan: the stage chain over position chunks per row, its workspace regions
/// and steps.
fn staged_plan(gpu: &Gpu, request: PlanRequest, choice: Choice, built: Built) -> Result<Plan> {
    if request.m_cap == 0 {
        return Err(Error::Input(
            "map=staged needs M_cap >= 1 row (its workspace and grids are sized by it)".into(),
        ));
    }
    // The stage chain's limits are the sharded selector's with one rank.
    crate::sharding::Sharding::new(1, request.width as usize).map_err(|_| {
        Error::Input(format!(
            "map=staged takes rows of at most {} scores, got width {}; use a persistent mapping",
            crate::sharding::MAX_SHARDED_POSITIONS,
            request.width
        ))
    })?;
    let spec = choice.spec;
    let block = built.kernel.layout.threads;
    let (chunks, chunk_len) =
        super::sharded::stages::chunking(request.width, request.m_cap, gpu.props().sms);
    let regions = super::sharded::stages::Regions::new(&spec, request.m_cap as usize, 1);
    let steps = super::sharded::stages::steps(&regions, chunks, request.m_cap, &spec, block);
    Ok(Plan {
        request,
        spec,
        grid: chunks,
        block,
        smem: built.kernel.layout.dynamic_smem,
        spill_cap: 0,
        workspace_bytes: regions.total as u64 * 4,
        ctas_per_sm: built.ctas_per_sm,
        source: choice.source,
        stages: Some(StagedLayout {
            chunks,
            chunk_len,
            regions,
            steps,
        }),
        kernel: built.kernel,
        loaded: built.loaded,
    })
}

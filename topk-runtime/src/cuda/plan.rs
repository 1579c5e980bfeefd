//! The planner: (K, dtype, M_cap, N, pitch, device) -> a Plan fixed before graph capture.
//!
//! A Plan names the generated kernel, its grid, block and shared memory, and the workspace it
//! needs. The live row count and the valid lengths stay device inputs, so one Plan serves every
//! replay of a captured graph.

use super::device::{Gpu, Loaded};
use crate::{Error, Result};
use topk_codegen::{Family, KernelSource};
use topk_dsl::{Spec, MAX_K};

/// What a caller plans for: capacities, not live values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanRequest {
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
    /// Build the persistent kernel with phase timers ([`topk_codegen::probe`]): the |Q0| words of
    /// the route info then carry per-row phase times instead of candidate counts. For finding
    /// where time goes; never for timing the selector itself.
    pub phase_probe: bool,
}

impl PlanRequest {
    pub fn new(k: u32, m_cap: u32, width: u32) -> Self {
        PlanRequest {
            k,
            m_cap,
            width,
            pitch: width as u64,
            out_pitch: k as u64,
            spec: None,
            phase_probe: false,
        }
    }

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

// The default map (which Spec a shape gets without a spec or an autotune record) lives in
// `default_map`; its items stay reachable here, where callers look for them.
pub use super::default_map::*;

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
    pub request: PlanRequest,
    pub spec: Spec,
    pub kernel: KernelSource,
    pub loaded: Loaded,
    pub grid: u32,
    pub block: u32,
    pub smem: u32,
    /// Frontier spill capacity per worker and ping-pong buffer, in (key, index) pairs.
    pub spill_cap: u32,
    /// Bytes of the workspace: control words + per-worker spill slices.
    pub workspace_bytes: u64,
    /// CTAs resident per SM, from the occupancy calculator.
    pub ctas_per_sm: u32,
    pub source: SpecSource,
    /// The stage chain of a `map=staged` plan (`grid` is then its position chunks per row);
    /// `None` for the single-kernel families.
    pub stages: Option<StagedLayout>,
}

/// How a `map=staged` plan splits its rows: position chunks per row, scores per chunk, and the
/// workspace regions of the stage chain (one rank of `sharded.cu`).
#[derive(Clone, Debug)]
pub struct StagedLayout {
    pub chunks: u32,
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

/// A generated kernel loaded for a plan, with its residency.
struct Built {
    kernel: KernelSource,
    loaded: Loaded,
    /// CTAs resident per SM, from the occupancy calculator.
    ctas_per_sm: u32,
    /// Clusters resident on the whole device, for the cluster family when the driver says.
    clusters: Option<u32>,
}

/// Generates `spec` (with phase timers when asked), refuses what the plan cannot run, and
/// loads it through the caches.
fn load_kernel(gpu: &Gpu, spec: &Spec, request: &PlanRequest) -> Result<Built> {
    let kernel = if request.phase_probe {
        topk_codegen::probe::generate_probed(spec)?
    } else {
        topk_codegen::generate(spec)?
    };
    if let Some(max) = kernel.layout.max_row {
        if request.width > max {
            return Err(Error::Input(format!(
                "`{spec}` holds rows of at most {max} scores in registers, but the width is {}: \
                 use rowlocal(streaming) or a persistent mapping",
                request.width
            )));
        }
    }
    let smem = kernel.layout.dynamic_smem;
    let block = kernel.layout.threads;
    let loaded = gpu.load(&kernel.source, &kernel.entry, smem)?;
    let mut clusters = None;
    if let Family::Cluster { ctas } = kernel.family {
        if ctas > 8 {
            gpu.allow_non_portable_clusters(&loaded)?;
        }
        clusters = gpu.resident_clusters(&loaded, ctas as u32, block, smem);
        if clusters == Some(0) {
            return Err(Error::Input(format!(
                "`{spec}`: no cluster of {ctas} CTAs of {block} threads fits on this device; use \
                 map=cluster(8) or a persistent mapping"
            )));
        }
    }
    let ctas_per_sm = loaded
        .func
        .occupancy_max_active_blocks_per_multiprocessor(block, smem as usize, None)
        .map_err(|e| Error::Cuda(format!("occupancy of `{}`: {e}", kernel.entry)))?
        .max(1) as u32;
    Ok(Built {
        kernel,
        loaded,
        ctas_per_sm,
        clusters,
    })
}

impl Plan {
    /// Plans `request` on `gpu`: chooses the Spec (given; else the autotune store's record for
    /// this device and shape bucket, see [`crate::autotune`]; else the default map), generates,
    /// compiles (through the caches) and sizes the grid and workspace.
    pub fn new(gpu: &Gpu, request: PlanRequest) -> Result<Plan> {
        let store = match crate::autotune::Store::default_path() {
            Some(path) => crate::autotune::Store::load(&path).ok(),
            None => None,
        };
        Plan::with_store(gpu, request, store.as_ref())
    }

    /// [`Plan::new`] with an explicit autotune store (`None`: default map only).
    pub fn with_store(
        gpu: &Gpu,
        request: PlanRequest,
        store: Option<&crate::autotune::Store>,
    ) -> Result<Plan> {
        use crate::autotune::{candidates, Lookup, ShapeBucket};
        request.check()?;
        let (spec, source) = match (request.spec, store) {
            (Some(spec), _) => (spec, SpecSource::Given),
            (None, store) => {
                let default = default_spec_on(
                    gpu.props().cc_major,
                    request.k,
                    request.m_cap,
                    request.width,
                );
                let bucket = ShapeBucket::of(request.k, request.m_cap, request.width);
                let current = candidates(request.k, request.width);
                match store.map(|s| s.lookup(&super::tune::device_key(gpu), &bucket, &current)) {
                    Some(Lookup::Tuned(spec)) => (spec, SpecSource::Tuned),
                    Some(Lookup::Ignored(why)) => (default, SpecSource::DefaultIgnoring(why)),
                    Some(Lookup::Missing) | None => (default, SpecSource::Default),
                }
            }
        };
        if spec.k != request.k {
            return Err(Error::Input(format!(
                "spec has k = {} but the plan asks for K = {}",
                spec.k, request.k
            )));
        }
        // The default map's 16-CTA clusters need the non-portable size and one resident cluster
        // per row; where this device holds fewer (or none), the same spec on 8-CTA clusters
        // takes the rows (a sampled one stays sampled: at 1 row of 2M-4M, where 16-CTA clusters
        // sample, sampled 8-CTA clusters took 0.029-0.044 ms and exact ones 0.053-0.088 ms in
        // an earlier run, bench/RESULTS.md).
        let default_map = matches!(source, SpecSource::Default | SpecSource::DefaultIgnoring(_));
        let default_cluster16 =
            matches!(spec.mapping, topk_dsl::Mapping::Cluster { ctas: 16 }) && default_map;
        let mut spec = spec;
        let mut built = load_kernel(gpu, &spec, &request);
        if default_cluster16 {
            let fits =
                matches!(&built, Ok(b) if !matches!(b.clusters, Some(n) if n < request.m_cap));
            if !fits {
                spec = Spec {
                    mapping: topk_dsl::Mapping::Cluster { ctas: 8 },
                    ..spec
                };
                built = load_kernel(gpu, &spec, &request);
            }
        }
        // The default map's stagger offsets the two CTAs of an SM (measured with two 512-thread
        // CTAs per SM); a device that holds another number of them starts the pool together.
        if default_map && spec.stagger_us > 0 && !matches!(&built, Ok(b) if b.ctas_per_sm == 2) {
            spec = Spec {
                stagger_us: 0,
                ..spec
            };
            built = load_kernel(gpu, &spec, &request);
        }
        // The tail margin covers the rows the pool starts last, one per worker: the pool's size,
        // which a spec of the default map or of an autotune record (candidates are the same on
        // every device) cannot carry, so it is set here from the first build's occupancy. Calls
        // of at most one pool of rows have no tail. If the kernel with the tail held another
        // number of CTAs per SM, the plan keeps the one without.
        let tail_rho = persistent_tail_rho(request.width, &spec)
            .filter(|_| !matches!(source, SpecSource::Given));
        if let (Some(rho), Ok(first)) = (tail_rho, &built) {
            let pool = gpu.props().sms * first.ctas_per_sm;
            if request.m_cap > pool {
                let tailed = Spec {
                    tail_rows: pool,
                    tail_rho: rho,
                    ..spec
                };
                let tailed_build = load_kernel(gpu, &tailed, &request);
                if matches!(&tailed_build, Ok(b) if b.ctas_per_sm == first.ctas_per_sm) {
                    spec = tailed;
                    built = tailed_build;
                }
            }
        }
        let Built {
            kernel,
            loaded,
            ctas_per_sm,
            clusters,
        } = built?;
        let smem = kernel.layout.dynamic_smem;
        let block = kernel.layout.threads;
        let sms = gpu.props().sms;
        if kernel.family == Family::Staged {
            if request.m_cap == 0 {
                return Err(Error::Input(
                    "map=staged needs M_cap >= 1 row (its workspace and grids are sized by it)"
                        .into(),
                ));
            }
            // The stage chain's limits are the sharded selector's with one rank.
            crate::sharding::Sharding::new(1, request.width as usize).map_err(|_| {
                Error::Input(format!(
                    "map=staged takes rows of at most {} scores, got width {}; use a persistent \
                     mapping",
                    crate::sharding::MAX_SHARDED_POSITIONS,
                    request.width
                ))
            })?;
            let (chunks, chunk_len) =
                super::sharded::stages::chunking(request.width, request.m_cap, sms);
            let regions = super::sharded::stages::Regions::new(&spec, request.m_cap as usize, 1);
            let steps =
                super::sharded::stages::steps(&regions, chunks, request.m_cap, spec.k, block);
            return Ok(Plan {
                request,
                spec,
                grid: chunks,
                block,
                smem,
                spill_cap: 0,
                workspace_bytes: regions.total as u64 * 4,
                ctas_per_sm,
                source,
                stages: Some(StagedLayout {
                    chunks,
                    chunk_len,
                    regions,
                    steps,
                }),
                kernel,
                loaded,
            });
        }
        let grid = match kernel.family {
            // One cluster per row (rows loop inside); the grid is whole clusters, as many as
            // are resident at once (the driver's count when it gives one).
            Family::Cluster { ctas } => {
                let ctas = ctas as u32;
                let resident = clusters.unwrap_or(sms * ctas_per_sm / ctas);
                resident.max(1).min(request.m_cap.max(1)) * ctas
            }
            _ => (sms * ctas_per_sm).min(request.m_cap.max(1)),
        };
        let (spill_cap, workspace_bytes) = workspace_size(&kernel.layout, request.width, grid);
        Ok(Plan {
            request,
            spec,
            kernel,
            loaded,
            grid,
            block,
            smem,
            spill_cap,
            workspace_bytes,
            ctas_per_sm,
            source,
            stages: None,
        })
    }

    pub fn family(&self) -> Family {
        self.kernel.family
    }
}

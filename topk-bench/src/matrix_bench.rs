//! One shape benchmarked on the GPU: planned (optionally as the phase-probe build), timed as
//! CUDA graph replays and verified on the device by the runtime's [`time_plan`], reported with
//! the plan's facts and the one-read floor.

use crate::phases::{PhaseSummary, RowTimeline};
use topk_dsl::Spec;
use topk_runtime::cuda::timing::{GraphTiming, TimingProtocol};
use topk_runtime::cuda::tune::time_plan;
use topk_runtime::cuda::{DeviceMatrix, Gpu, Plan, PlanRequest};
use topk_runtime::{Error, Result, RouteStats};

/// Read bandwidth measured on the H200 with a float4 streaming read: the floor divisor.
pub const FLOOR_READ_BYTES_PER_S: f64 = 4.49e12;

/// One benchmarked shape.
#[derive(Clone, Debug)]
pub struct BenchReport {
    /// The spec that ran (the planner's choice when none was given).
    pub spec: Spec,
    /// The kernel's entry point.
    pub entry: String,
    /// Rows of the matrix.
    pub rows: usize,
    /// Row width of the matrix.
    pub width: usize,
    /// Rank selected.
    pub k: u32,
    /// Replay timing.
    pub timing: GraphTiming,
    /// One read of the valid scores at [`FLOOR_READ_BYTES_PER_S`], milliseconds.
    pub floor_ms: f64,
    /// Bytes of valid scores.
    pub valid_bytes: u64,
    /// Whether every row of the timed output satisfies the contract.
    pub exact: bool,
    /// Rows that do not, as (row, device verifier code).
    pub bad_rows: Vec<(usize, i32)>,
    /// Route statistics of an untimed call.
    pub routes: RouteStats,
    /// Workspace bytes of the plan.
    pub workspace_bytes: u64,
    /// CTAs launched.
    pub grid: u32,
    /// CTAs resident per SM.
    pub ctas_per_sm: u32,
    /// Milliseconds spent compiling the kernel (0 when it came from a cache).
    pub compile_ms: f64,
    /// Per-row phase times of a phase-probe build ([`bench_matrix_with`]), else `None`; such a
    /// build's candidate counts in `routes` are meaningless.
    pub phases: Option<PhaseSummary>,
    /// A phase-probe build's rows laid out in time (rows longer than K), else empty.
    pub timeline: Vec<RowTimeline>,
}

/// Plans, captures and times the selector on `m`, then verifies the timed output.
pub fn bench_matrix(
    gpu: &Gpu,
    m: &DeviceMatrix,
    k: u32,
    spec: Option<Spec>,
    protocol: TimingProtocol,
) -> Result<BenchReport> {
    bench_matrix_with(gpu, m, k, spec, protocol, false)
}

/// [`bench_matrix`]; with `phase_probe`, on the phase-timing build of the persistent or cluster kernel
/// ([`topk_codegen::probe`]): the report's `phases` say where the rows' time went, and its
/// times and candidate counts are those of the instrumented build, not the selector's.
pub fn bench_matrix_with(
    gpu: &Gpu,
    m: &DeviceMatrix,
    k: u32,
    spec: Option<Spec>,
    protocol: TimingProtocol,
    phase_probe: bool,
) -> Result<BenchReport> {
    let mut request = PlanRequest::new(k, m.rows as u32, m.width as u32);
    request.pitch = m.pitch as u64;
    request.spec = spec;
    request.phase_probe = phase_probe;
    let plan = Plan::new(gpu, request)?;
    if phase_probe && plan.grid > 1024 {
        // The probe's route word holds a worker index of ten bits.
        return Err(Error::Input(format!(
            "the phase probe names at most 1024 workers; this plan launches {}",
            plan.grid
        )));
    }
    let trial = time_plan(gpu, &plan, m, protocol)?;
    let (phases, timeline) = if phase_probe {
        let timeline = RowTimeline::from_info(&trial.row_info);
        (Some(PhaseSummary::of(&timeline)), timeline)
    } else {
        (None, Vec::new())
    };
    let valid_bytes = m.valid_bytes();
    Ok(BenchReport {
        spec: plan.spec,
        entry: plan.kernel.entry.clone(),
        rows: m.rows,
        width: m.width,
        k,
        floor_ms: valid_bytes as f64 / FLOOR_READ_BYTES_PER_S * 1e3,
        valid_bytes,
        exact: trial.exact(),
        timing: trial.timing,
        bad_rows: trial.bad_rows,
        routes: trial.routes,
        workspace_bytes: plan.workspace_bytes,
        grid: plan.grid,
        ctas_per_sm: plan.ctas_per_sm,
        compile_ms: plan.loaded.compile_ms,
        phases,
        timeline,
    })
}

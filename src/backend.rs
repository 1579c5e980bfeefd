//! Where a selection runs: the CPU backend, or the generated CUDA kernels.

use std::fmt;
use std::time::{Duration, Instant};
use topk_dsl::Spec;
use topk_runtime::cpu::sharded::ShardedScores;
use topk_runtime::cuda::timing::TimingProtocol;
use topk_runtime::cuda::tune::time_plan;
use topk_runtime::cuda::{CudaSelector, DeviceMatrix, Gpu, Plan, PlanRequest};
use topk_runtime::sharding::Sharding;
use topk_runtime::{Error, Result, RouteStats, ScoreMatrix};

/// An execution backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The CPU backend (rayon over rows).
    Cpu,
    /// The generated CUDA kernels on GPU 0.
    Cuda,
}

impl Backend {
    /// `cpu` or `cuda`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend choice and, when `auto` fell back to the CPU, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The backend chosen.
    pub backend: Backend,
    /// Why `auto` took the CPU (what the GPU path is missing).
    pub fallback_reason: Option<String>,
}

/// Turn `auto`, `cpu` or `cuda` into a backend. `auto` takes the GPU when one is usable and
/// the CPU otherwise; `cuda` fails when no GPU is usable, saying why.
pub fn resolve(choice: &str) -> Result<Resolved> {
    let resolved = |backend, fallback_reason| Resolved {
        backend,
        fallback_reason,
    };
    match choice {
        "cpu" => Ok(resolved(Backend::Cpu, None)),
        "cuda" => cuda_usable().map(|()| resolved(Backend::Cuda, None)),
        "auto" => Ok(match cuda_usable() {
            Ok(()) => resolved(Backend::Cuda, None),
            Err(e) => resolved(Backend::Cpu, Some(e.to_string())),
        }),
        other => Err(Error::Input(format!(
            "unknown backend `{other}`: choose auto, cpu or cuda"
        ))),
    }
}

/// `Ok` when a GPU can run the generated kernels here; otherwise what is missing.
fn cuda_usable() -> Result<()> {
    if Gpu::available() {
        Ok(())
    } else {
        // Opening the device again yields the reason (no driver, no device, no NVRTC, ...).
        Gpu::open(0).map(|_| ())
    }
}

/// The CPU policy used when the caller names none: the GPU planner's persistent default at `k`
/// for rows of `width` scores (`topk_runtime::policy::persistent_spec_for`), so both
/// backends take the same routes by default, but for the rows of a GPU call's tail margin,
/// which the planner sizes to the device's worker pool (`Spec::tail_rows`; the CPU has none).
pub fn default_spec(k: usize, width: usize) -> Spec {
    let width = u32::try_from(width).unwrap_or(u32::MAX);
    at_rank(k, |k| topk_runtime::policy::persistent_spec_for(k, width))
}

/// The policy of [`select_sharded`] when the caller names none: the context-parallel
/// selector's default (`topk_runtime::policy::context_parallel_spec`).
fn sharded_default_spec(k: usize) -> Spec {
    at_rank(k, topk_runtime::policy::context_parallel_spec)
}

/// `policy` at rank `k`; an out-of-range K stays out of range, for the spec's validation to
/// report.
fn at_rank(k: usize, policy: impl Fn(u32) -> Spec) -> Spec {
    let k = u32::try_from(k).unwrap_or(u32::MAX);
    Spec {
        k,
        ..policy(k.min(topk_dsl::MAX_K))
    }
}

/// The outcome of one selection.
#[derive(Clone, Debug)]
pub struct Selection {
    /// The spec that ran (the planner's choice on the GPU when none was given).
    pub spec: Spec,
    /// The routes the rows took.
    pub stats: RouteStats,
    /// Wall time of the selection; on the GPU it includes the host-device copies.
    pub elapsed: Duration,
}

/// Select the `k` largest valid scores of every row of `scores` on `backend` into `out` (row
/// `r` at `out[r * out_pitch..][..k]`). With no `spec`, the CPU runs [`default_spec`] and the
/// GPU planner chooses a kernel for the shape.
pub fn select(
    backend: Backend,
    spec: Option<&Spec>,
    k: usize,
    scores: &ScoreMatrix,
    out: &mut [i32],
    out_pitch: usize,
) -> Result<Selection> {
    check_spec_k(spec, k)?;
    match backend {
        Backend::Cpu => {
            let spec = spec
                .copied()
                .unwrap_or_else(|| default_spec(k, scores.width));
            let start = Instant::now();
            let stats = topk_runtime::cpu::select(&spec, scores, out, out_pitch, false)?;
            Ok(Selection {
                spec,
                stats,
                elapsed: start.elapsed(),
            })
        }
        Backend::Cuda => {
            let gpu = Gpu::open(0)?;
            let too_large = |what: &str, n: usize| {
                Error::Input(format!(
                    "{what} {n} is too large for one GPU call; split the input"
                ))
            };
            let rows =
                u32::try_from(scores.rows).map_err(|_| too_large("row count", scores.rows))?;
            let width =
                u32::try_from(scores.width).map_err(|_| too_large("width", scores.width))?;
            let mut request = PlanRequest::new(k as u32, rows.max(1), width);
            request.pitch = scores.pitch as u64;
            request.out_pitch = out_pitch as u64;
            request.spec = spec.copied();
            let mut selector = CudaSelector::new(&gpu, request)?;
            let start = Instant::now();
            let stats = selector.select_host(scores, out, out_pitch, false)?;
            Ok(Selection {
                spec: selector.plan().spec,
                stats,
                elapsed: start.elapsed(),
            })
        }
    }
}

/// [`select`] on the CPU as the context-parallel ranks of `sharding` would compute it (each rank
/// holding its contiguous positions of every row; global indices), the ranks simulated in
/// process. The time covers the selection, not cutting the matrix into shards.
pub fn select_sharded(
    spec: Option<&Spec>,
    k: usize,
    sharding: Sharding,
    scores: &ScoreMatrix,
    out: &mut [i32],
    out_pitch: usize,
) -> Result<Selection> {
    check_spec_k(spec, k)?;
    let spec = spec.copied().unwrap_or_else(|| sharded_default_spec(k));
    let shards = sharding.split(scores)?;
    let shard_refs: Vec<&[f32]> = shards.iter().map(Vec::as_slice).collect();
    let sharded = ShardedScores {
        sharding,
        shards: &shard_refs,
        lengths: scores.lengths,
        rows: scores.rows,
    };
    let start = Instant::now();
    let stats = topk_runtime::cpu::sharded::select_sharded(&spec, &sharded, out, out_pitch, false)?;
    Ok(Selection {
        spec,
        stats,
        elapsed: start.elapsed(),
    })
}

fn check_spec_k(spec: Option<&Spec>, k: usize) -> Result<()> {
    match spec {
        Some(s) if s.k as usize != k => Err(Error::Input(format!(
            "the spec selects k={} but K = {k} was asked for; make them agree",
            s.k
        ))),
        _ => Ok(()),
    }
}

/// How many timed repetitions, after how many untimed ones.
#[derive(Clone, Copy, Debug)]
pub struct Repetitions {
    /// Untimed runs first.
    pub warmup: usize,
    /// Timed runs (on the GPU: rounds of graph replays).
    pub iters: usize,
}

/// Times of one selection over repeated runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    /// Median run.
    pub median: Duration,
    /// Fastest run.
    pub min: Duration,
    /// Slowest run.
    pub max: Duration,
    /// Timed repetitions (on the GPU: rounds of graph replays).
    pub iters: usize,
}

/// Whether a timed output satisfies the Top-K contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Every row satisfies the contract.
    pub exact: bool,
    /// Rows that do not.
    pub rows_violating: usize,
    /// The first few violations, one line each.
    pub violations: Vec<String>,
}

/// A timed and verified selector.
#[derive(Clone, Debug)]
pub struct Benchmark {
    /// The spec that ran.
    pub spec: Spec,
    /// The routes the rows took.
    pub stats: RouteStats,
    /// Times of the timed runs.
    pub timing: Timing,
    /// The verdict on the last timed run's output.
    pub verdict: Verdict,
}

/// Time the selection alone: `reps.warmup` untimed runs, then the median of `reps.iters` timed
/// ones, and verify the output of the last timed run. On the CPU each run is timed by the wall
/// clock; on the GPU the scores are uploaded once and the call is captured in a CUDA graph
/// whose replays are timed with events, so no copies are counted.
pub fn benchmark(
    backend: Backend,
    spec: Option<&Spec>,
    k: usize,
    scores: &ScoreMatrix,
    reps: Repetitions,
) -> Result<Benchmark> {
    match backend {
        Backend::Cpu => {
            let mut last = None;
            let (timing, verdict) = time_on_cpu(scores, k, reps, |out| {
                last = Some(select(backend, spec, k, scores, out, k)?);
                Ok(())
            })?;
            let last = last.expect("at least one run");
            Ok(Benchmark {
                spec: last.spec,
                stats: last.stats,
                timing,
                verdict,
            })
        }
        Backend::Cuda => {
            let gpu = Gpu::open(0)?;
            let matrix = DeviceMatrix::upload(
                &gpu,
                scores.data,
                scores.lengths,
                scores.width,
                scores.pitch,
            )?;
            benchmark_on_device(&gpu, &matrix, spec, k, reps)
        }
    }
}

/// [`benchmark`] on the GPU of a matrix already on the device (uploaded, or generated there
/// with `DeviceMatrix::generate`): the call is captured in a CUDA graph whose replays are timed
/// with events, and the timed output is verified on the device.
pub fn benchmark_on_device(
    gpu: &Gpu,
    matrix: &DeviceMatrix,
    spec: Option<&Spec>,
    k: usize,
    reps: Repetitions,
) -> Result<Benchmark> {
    let protocol = TimingProtocol {
        warmup: reps.warmup,
        rounds: reps.iters.max(1),
        ..TimingProtocol::default()
    };
    let mut request = PlanRequest::new(k as u32, matrix.rows as u32, matrix.width as u32);
    request.pitch = matrix.pitch as u64;
    request.spec = spec.copied();
    let plan = Plan::new(gpu, request)?;
    let trial = time_plan(gpu, &plan, matrix, protocol)?;
    let ms = |m: f64| Duration::from_secs_f64(m / 1e3);
    let exact = trial.exact();
    Ok(Benchmark {
        spec: plan.spec,
        stats: trial.routes,
        timing: Timing {
            median: ms(trial.timing.median_ms),
            min: ms(trial.timing.min_ms),
            max: ms(trial.timing.max_ms),
            iters: trial.timing.rounds,
        },
        verdict: Verdict {
            exact,
            rows_violating: trial.bad_rows.len(),
            violations: trial
                .bad_rows
                .iter()
                .take(8)
                .map(|(row, code)| format!("row {row}: the device verifier reports code {code}"))
                .collect(),
        },
    })
}

/// [`benchmark`] for the textbook CPU selector: per row, `select_nth_unstable_by` over
/// (score, index) pairs, rows in parallel.
pub fn benchmark_baseline(
    scores: &ScoreMatrix,
    k: usize,
    reps: Repetitions,
) -> Result<(Timing, Verdict)> {
    time_on_cpu(scores, k, reps, |out| {
        topk_runtime::cpu::select_baseline(scores, k, out, k)
    })
}

/// Run `select_into` on a fresh `rows x k` output `reps.warmup + reps.iters` times, timing the
/// last `reps.iters` runs, and verify the final output.
fn time_on_cpu(
    scores: &ScoreMatrix,
    k: usize,
    reps: Repetitions,
    mut select_into: impl FnMut(&mut [i32]) -> Result<()>,
) -> Result<(Timing, Verdict)> {
    let iters = reps.iters.max(1);
    let mut out = vec![-1i32; scores.rows * k];
    let mut times = Vec::with_capacity(iters);
    for run in 0..reps.warmup + iters {
        out.fill(-1);
        let start = Instant::now();
        select_into(&mut out)?;
        if run >= reps.warmup {
            times.push(start.elapsed());
        }
    }
    times.sort_unstable();
    let n = times.len();
    let median = if n % 2 == 1 {
        times[n / 2]
    } else {
        (times[n / 2 - 1] + times[n / 2]) / 2
    };
    let report = topk_runtime::cpu::verify(scores, k, &out, k)?;
    Ok((
        Timing {
            median,
            min: times[0],
            max: times[n - 1],
            iters,
        },
        Verdict {
            exact: report.is_exact(),
            rows_violating: report.rows_violating,
            violations: report
                .violations
                .iter()
                .map(|v| format!("row {}: {}", v.row, v.what))
                .collect(),
        },
    ))
}

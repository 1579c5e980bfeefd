//! Where a selection runs: the CPU backend, or the generated CUDA kernels.

use std::fmt;
use std::time::{Duration, Instant};
use topk_dsl::Spec;
use topk_runtime::cuda::{CudaSelector, Gpu, PlanRequest};
use topk_runtime::{Error, Result, RouteStats, ScoreMatrix};

/// An execution backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Cpu,
    Cuda,
}

impl Backend {
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
    pub backend: Backend,
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

/// The policy used when the caller names none: the paper's wide-row persistent policy at `k`.
pub fn default_spec(k: usize) -> Spec {
    Spec {
        k: k as u32,
        ..Spec::default()
    }
}

/// The outcome of one selection.
#[derive(Clone, Debug)]
pub struct Selection {
    /// The spec that ran (the planner's choice on the GPU when none was given).
    pub spec: Spec,
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
    if let Some(s) = spec {
        if s.k as usize != k {
            return Err(Error::Input(format!(
                "the spec selects k={} but K = {k} was asked for; make them agree",
                s.k
            )));
        }
    }
    match backend {
        Backend::Cpu => {
            let spec = spec.copied().unwrap_or_else(|| default_spec(k));
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
                Error::Input(format!("{what} {n} is too large for one GPU call; split the input"))
            };
            let rows = u32::try_from(scores.rows).map_err(|_| too_large("row count", scores.rows))?;
            let width = u32::try_from(scores.width).map_err(|_| too_large("width", scores.width))?;
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

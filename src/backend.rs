//! Where a selection runs: the CPU backend, or the generated CUDA kernels.

use std::fmt;
use std::time::{Duration, Instant};
use topk_dsl::Spec;
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

/// A backend choice and, for `auto`, why it fell where it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub backend: Backend,
    /// Set when `auto` could not use the GPU: the reason, for the user.
    pub fallback_reason: Option<String>,
}

/// Turn `auto`, `cpu` or `cuda` into a backend. `auto` takes the GPU when one is usable and
/// the CPU otherwise; `cuda` fails when no GPU is usable, saying why.
pub fn resolve(choice: &str) -> Result<Resolved> {
    match choice {
        "cpu" => Ok(Resolved {
            backend: Backend::Cpu,
            fallback_reason: None,
        }),
        "cuda" => cuda_usable().map(|()| Resolved {
            backend: Backend::Cuda,
            fallback_reason: None,
        }),
        "auto" => Ok(match cuda_usable() {
            Ok(()) => Resolved {
                backend: Backend::Cuda,
                fallback_reason: None,
            },
            Err(e) => Resolved {
                backend: Backend::Cpu,
                fallback_reason: Some(e.to_string()),
            },
        }),
        other => Err(Error::Input(format!(
            "unknown backend `{other}`: choose auto, cpu or cuda"
        ))),
    }
}

/// `Ok` when the CUDA backend can run here; otherwise the reason it cannot.
fn cuda_usable() -> Result<()> {
    Err(cuda_not_built())
}

fn cuda_not_built() -> Error {
    Error::Cuda("CUDA backend not available in this build; use --backend cpu".into())
}

/// Select the Top-K of every row of `scores` on `backend` into `out` (row `r` at
/// `out[r * out_pitch..][..K]`); returns the route statistics and the time the selection took.
pub fn select(
    backend: Backend,
    spec: &Spec,
    scores: &ScoreMatrix,
    out: &mut [i32],
    out_pitch: usize,
) -> Result<(RouteStats, Duration)> {
    match backend {
        Backend::Cpu => {
            let start = Instant::now();
            let stats = topk_runtime::cpu::select(spec, scores, out, out_pitch, false)?;
            Ok((stats, start.elapsed()))
        }
        Backend::Cuda => Err(cuda_not_built()),
    }
}

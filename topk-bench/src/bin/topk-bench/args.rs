//! Arguments the subcommands share: K, the data profile, the backend and the selector spec.

use clap::{Args, ValueEnum};
use topk::backend::{self, Backend, Resolved};
use topk::cli::CliError;
use topk_dsl::{Spec, MAX_K, PRESETS};
use topk_runtime::data::Profile;

/// Parse `--k`: a whole number in `1..=MAX_K`.
pub fn parse_k(text: &str) -> Result<usize, String> {
    match text.trim().parse::<i128>() {
        Err(_) => Err(format!("`{text}` is not a whole number")),
        Ok(k) if k < 1 => Err("K must be at least 1".into()),
        Ok(k) if k > MAX_K as i128 => Err(format!(
            "K must be at most {MAX_K}, the largest rank a selector supports"
        )),
        Ok(k) => Ok(k as usize),
    }
}

/// The data profile called `name`, or an error listing the profiles.
pub fn parse_profile(name: &str) -> Result<Profile, CliError> {
    name.parse::<Profile>().map_err(|e| match e {
        topk_runtime::Error::Input(why) => CliError::Usage(format!("--profile: {why}")),
        e => CliError::Runtime(e),
    })
}

/// Where selection runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendChoice {
    /// The GPU when one is usable, else the CPU
    Auto,
    /// The CPU backend (rayon over rows)
    Cpu,
    /// Generated CUDA kernels, compiled with NVRTC
    Cuda,
}

impl BackendChoice {
    /// The backend for `spec`: a spec the kernels do not generate yet
    /// (`Spec::gpu_unsupported`), or one of 16-bit scores (the GPU bench times generated
    /// float32 matrices), takes the CPU under `auto`, with the reason, and is refused under
    /// `cuda`.
    pub fn resolve_for(self, spec: Option<&Spec>) -> Result<Resolved, CliError> {
        let name = match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Cpu => "cpu",
            BackendChoice::Cuda => "cuda",
        };
        let why = spec.and_then(|s| {
            s.gpu_unsupported().or_else(|| {
                (s.dtype != topk_dsl::Dtype::F32).then(|| {
                    format!(
                        "the GPU bench times float32 matrices, not `dtype={}` scores; time 16-bit \
                         scores with `topk select --backend cuda`, or run this spec on the CPU \
                         backend (`--backend cpu`)",
                        s.dtype
                    )
                })
            })
        });
        if let (Some(why), BackendChoice::Cuda) = (&why, self) {
            return Err(CliError::Usage(format!("--backend cuda: {why}")));
        }
        let chosen = backend::resolve(name)?;
        Ok(match why {
            Some(why) if chosen.backend == Backend::Cuda => Resolved {
                backend: Backend::Cpu,
                fallback_reason: Some(why),
            },
            _ => chosen,
        })
    }
}

/// Which selector policy to run.
#[derive(Args, Clone, Debug, Default)]
pub struct SpecChoice {
    /// Selector spec in canonical text form, e.g.
    /// `map=persistent,propose=sampled(stride=64,rho=1.5)`; omitted fields keep their defaults
    /// [default: on the GPU the planner picks per shape; on the CPU the persistent default]
    #[arg(long, value_name = "TEXT")]
    pub spec: Option<String>,
    /// A named preset instead of --spec (list them with `topk spec --list`); K comes from --k
    #[arg(long, value_name = "NAME", conflicts_with = "spec")]
    pub preset: Option<String>,
}

impl SpecChoice {
    /// The chosen spec at rank `k`, validated; `None` when neither --spec nor --preset was
    /// given. A `k=` written in --spec must agree with --k.
    pub fn resolve(&self, k: usize) -> Result<Option<Spec>, CliError> {
        let mut spec = match (&self.spec, &self.preset) {
            (Some(text), _) => {
                let spec = Spec::parse(text)?;
                // Nested arguments (`sampled(stride=..,rho=..)`) have no key `k`.
                let names_k = text
                    .split(',')
                    .any(|f| f.split('=').next().map(str::trim) == Some("k"));
                if names_k && spec.k as usize != k {
                    return Err(CliError::Usage(format!(
                        "--spec says k={} but --k is {k}; drop `k=` from the spec or make them agree",
                        spec.k
                    )));
                }
                spec
            }
            (None, Some(name)) => topk_dsl::preset(name).ok_or_else(|| {
                let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
                CliError::Usage(format!(
                    "unknown preset `{name}`; choose one of: {}",
                    names.join(", ")
                ))
            })?,
            (None, None) => return Ok(None),
        };
        spec.k = k as u32;
        spec.validate()?;
        Ok(Some(spec))
    }
}

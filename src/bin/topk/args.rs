//! Arguments several subcommands share: K, the backend, and the selector spec.

use clap::{Args, ValueEnum};
use topk::cli::CliError;
use topk_dsl::{Spec, MAX_K, PRESETS};
use topk_runtime::data::Profile;

/// Parse `--k`: a whole number in `1..=MAX_K`.
pub fn parse_k(text: &str) -> Result<usize, String> {
    let k: i128 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number"))?;
    if k < 1 {
        return Err("K must be at least 1".into());
    }
    if k > MAX_K as i128 {
        return Err(format!(
            "K must be at most {MAX_K}, the largest rank a selector supports"
        ));
    }
    Ok(k as usize)
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
    pub fn as_str(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Cpu => "cpu",
            BackendChoice::Cuda => "cuda",
        }
    }
}

/// Which selector policy to run.
#[derive(Args, Clone, Debug, Default)]
pub struct SpecChoice {
    /// Selector spec in canonical text form, e.g.
    /// `map=persistent,propose=sampled(stride=64,rho=1.5)`; omitted fields keep their defaults
    /// [default: on the GPU the planner picks per shape; on the CPU the persistent stride-128
    /// policy with rescue]
    #[arg(long, value_name = "TEXT")]
    pub spec: Option<String>,
    /// A named preset instead of --spec (list them with `topk spec --list`); K comes from --k
    #[arg(long, value_name = "NAME", conflicts_with = "spec")]
    pub preset: Option<String>,
}

impl SpecChoice {
    /// The chosen spec at rank `k`, validated; `None` when neither --spec nor --preset was
    /// given (the backend then picks its default). A `k=` written in --spec must agree with --k.
    pub fn resolve(&self, k: usize) -> Result<Option<Spec>, CliError> {
        let spec = self.resolve_unvalidated(k)?;
        if let Some(spec) = &spec {
            spec.validate()?;
        }
        Ok(spec)
    }

    /// [`SpecChoice::resolve`] without the final validation, for callers that change fields
    /// (the dtype of a score file) before validating.
    pub fn resolve_unvalidated(&self, k: usize) -> Result<Option<Spec>, CliError> {
        let mut spec = match (&self.spec, &self.preset) {
            (Some(text), _) => {
                let spec = Spec::parse(text)?;
                if names_field(text, "k") && spec.k as usize != k {
                    return Err(CliError::Usage(format!(
                        "--spec says k={} but --k is {k}; drop `k=` from the spec or make them agree",
                        spec.k
                    )));
                }
                spec
            }
            (None, Some(name)) => lookup_preset(name)?,
            (None, None) => return Ok(None),
        };
        spec.k = k as u32;
        Ok(Some(spec))
    }
}

/// The data profile called `name`, or an error listing the profiles.
pub fn parse_profile(name: &str) -> Result<Profile, CliError> {
    name.parse::<Profile>().map_err(|e| match e {
        topk_runtime::Error::Input(why) => CliError::Usage(format!("--profile: {why}")),
        e => CliError::Runtime(e),
    })
}

/// The spec of preset `name`, or an error listing the presets.
pub fn lookup_preset(name: &str) -> Result<Spec, CliError> {
    topk_dsl::preset(name).ok_or_else(|| {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        CliError::Usage(if names.is_empty() {
            format!("unknown preset `{name}`: this build defines no presets yet; use --spec")
        } else {
            format!(
                "unknown preset `{name}`; choose one of: {} (details: `topk spec --list`)",
                names.join(", ")
            )
        })
    })
}

impl SpecChoice {
    /// Whether `--spec` text sets the top-level field `key` (a preset names none: its fields
    /// are the preset's, not the caller's).
    pub fn names(&self, key: &str) -> bool {
        self.spec
            .as_deref()
            .is_some_and(|text| names_field(text, key))
    }
}

/// Whether spec text sets the top-level field `key` (nested arguments such as
/// `sampled(stride=...)` are skipped).
fn names_field(text: &str, key: &str) -> bool {
    let mut depth = 0i32;
    let mut field_start = 0;
    let bytes = text.as_bytes();
    for (i, &c) in bytes.iter().chain(std::iter::once(&b',')).enumerate() {
        match c {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b',' if depth == 0 => {
                let field = &text[field_start..i.min(text.len())];
                if field.split('=').next().map(str::trim) == Some(key) && field.contains('=') {
                    return true;
                }
                field_start = i + 1;
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_is_bounded_on_both_sides() {
        assert!(parse_k("0").is_err());
        assert!(parse_k("-3").is_err());
        assert!(parse_k("x").is_err());
        assert!(parse_k(&(MAX_K + 1).to_string()).is_err());
        assert_eq!(parse_k("1"), Ok(1));
        assert_eq!(parse_k(&MAX_K.to_string()), Ok(MAX_K as usize));
    }

    #[test]
    fn only_a_top_level_k_field_counts() {
        let names_k = |text| names_field(text, "k");
        assert!(names_k("k=64"));
        assert!(names_k("map=persistent, k = 64"));
        assert!(!names_k(
            "map=persistent,propose=sampled(stride=128,rho=1.5)"
        ));
        assert!(!names_k(""));
        assert!(!names_k("kk=3"));
        assert!(names_field("k=64, dtype = bf16", "dtype"));
        assert!(!names_field("k=64", "dtype"));
    }
}

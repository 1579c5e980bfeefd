//! `topk routes`: how often each route is taken, and how many candidates a row admits, for
//! proposal policies over generated data (the statistics half of the paper's §6.4 ablations).

use crate::args::parse_profile;
use crate::{progress, report, CmdResult};
use clap::Args;
use std::process::ExitCode;
use topk::cli::CliError;
use topk_dsl::{Centi, Proposal, Spec};
use topk_runtime::data::route_rates::{route_rates, row_outcomes, view_underfill, ViewShape};
use topk_runtime::data::Profile;
use topk_runtime::policy::context_parallel_spec;

const EXAMPLES: &str = "\
Examples:
  topk routes --profile indexer,iid --rows 512 --width 262144 --rho 1,1.25,1.5,1.75,2 --rescue none
  topk routes --profile iid --rows 512 --width 1048576 --stride 16,32,64,128,256 --rescue none
  topk routes --profile indexer --rows 256 --width 131072 --spec 'propose=sampled(stride=64,rho=1.5)'
  topk routes --profile iid --rows 512 --width 262144 --seed 1 --per-row --spec 'propose=sampled(stride=128,rho=1.75,rescue=2.5),view=run(2),tail=2@264'";

/// Route shares and candidate counts of proposal policies on generated score profiles
///
/// Each policy selects the terminal causal window of --rows rows ending at --width on the CPU
/// backend, which takes the same route as the GPU kernels on every row (the GPU tests check
/// this row by row). Reported per policy: the share of rows (L > K) certified by the primary
/// boundary, by the band rescue, by exact recovery, or sent to the direct exact route, and the
/// mean initial frontier |Q0| per row. Without --spec, the planner's default sampled policy is
/// varied by the --stride, --rho and --rescue lists (their cartesian product).
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct RoutesArgs {
    /// Profiles, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "indexer,iid")]
    profile: Vec<String>,
    #[arg(long, default_value_t = 256)]
    rows: usize,
    #[arg(long, default_value_t = 262_144)]
    width: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long, default_value_t = 2048, value_parser = crate::args::parse_k)]
    k: usize,
    /// Policies as spec text (repeatable); overrides the lists below
    #[arg(long, value_name = "TEXT")]
    spec: Vec<String>,
    /// View strides, comma-separated
    #[arg(long, value_delimiter = ',')]
    stride: Vec<u32>,
    /// Target ranks as multiples of K, comma-separated
    #[arg(long, value_delimiter = ',')]
    rho: Vec<f64>,
    /// Rescue ranks as multiples of K, or `none`, comma-separated
    #[arg(long, value_delimiter = ',')]
    rescue: Vec<String>,
    /// Instead of routes: the primary underfill of views reading this many contiguous scores
    /// per sample group (1: the stride view; 8: one 32-byte sector per group, the same sample
    /// count), for each --stride and --rho
    #[arg(long, value_delimiter = ',', value_name = "RUNS")]
    views: Vec<u32>,
    /// Instead of the shares: one JSON line per row and policy (profile, spec, row, valid length,
    /// route, |Q0|). With --seed 1, the same --k and --spec set to the spec a timeline line
    /// names, the rows are those of a phase-probe timeline (`TOPK_PHASE_TIMELINE`) of
    /// `operator-matrix` (topk-bench)
    #[arg(long, conflicts_with = "views")]
    per_row: bool,
}

pub fn run(a: RoutesArgs) -> CmdResult {
    if !a.views.is_empty() {
        return views(&a);
    }
    let specs = policies(&a)?;
    let profiles = a
        .profile
        .iter()
        .map(|p| parse_profile(p))
        .collect::<Result<Vec<_>, _>>()?;
    if a.per_row {
        return per_row(&a, &profiles, &specs);
    }
    let bar = progress::rows((profiles.len() * specs.len()) as u64, "policies");
    let mut lines = Vec::new();
    for profile in &profiles {
        for spec in &specs {
            let r = route_rates(*profile, a.rows, a.width, a.seed, spec)?;
            bar.inc(1);
            lines.push(format!(
                "{:<12} {:>8.2}% {:>8.2}% {:>9.3}% {:>7.2}% {:>10.0}  {}",
                profile.name(),
                100.0 * r.primary,
                100.0 * r.rescue,
                100.0 * r.recovery,
                100.0 * r.direct,
                r.mean_candidates,
                proposal_text(spec)
            ));
        }
    }
    bar.finish_and_clear();
    report::line(format!(
        "{} rows ending at {}, K = {}, seed {}:",
        a.rows, a.width, a.k, a.seed
    ));
    report::line(format!(
        "{:<12} {:>9} {:>9} {:>10} {:>8} {:>10}  proposal",
        "profile", "primary", "rescue", "recovery", "direct", "cand/row"
    ));
    for l in lines {
        report::line(l);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--per-row`: every row's route and |Q0|, as JSON lines.
fn per_row(a: &RoutesArgs, profiles: &[Profile], specs: &[Spec]) -> CmdResult {
    let bar = progress::rows((profiles.len() * specs.len()) as u64, "policies");
    let mut lines = Vec::new();
    for profile in profiles {
        for spec in specs {
            let rows = row_outcomes(*profile, a.rows, a.width, a.seed, spec)?;
            bar.inc(1);
            for (row, o) in rows.iter().enumerate() {
                lines.push(serde_json::json!({
                    "profile": profile.name(),
                    "rows": a.rows,
                    "width": a.width,
                    "seed": a.seed,
                    "spec": spec.to_string(),
                    "row": row,
                    "length": o.length,
                    "route": o.route.name(),
                    "candidates": o.candidates,
                }));
            }
        }
    }
    bar.finish_and_clear();
    for l in lines {
        report::line(l);
    }
    Ok(ExitCode::SUCCESS)
}

fn proposal_text(spec: &Spec) -> String {
    spec.proposal.to_string()
}

fn policies(a: &RoutesArgs) -> Result<Vec<Spec>, CliError> {
    let k = a.k as u32;
    if !a.spec.is_empty() {
        return a
            .spec
            .iter()
            .map(|text| {
                let mut spec = Spec::parse(text)?;
                spec.k = k;
                spec.validate()?;
                Ok(spec)
            })
            .collect();
    }
    // The routes depend on the proposal alone: the planner's default sampled policy on the
    // stride view (`--views` compares the grouped ones), whatever mapping the shape would get,
    // sampling every row (the persistent default's `exact_below` is left out; `--spec` takes it).
    let base = context_parallel_spec(k);
    let (stride0, rho0, rescue0) = match base.proposal {
        Proposal::Sampled {
            stride,
            rho,
            rescue,
            ..
        } => (stride, rho, rescue),
        Proposal::Exact => (128, Centi(150), Some(Centi(250))),
    };
    let strides = if a.stride.is_empty() {
        vec![stride0]
    } else {
        a.stride.clone()
    };
    let rhos: Vec<Centi> = if a.rho.is_empty() {
        vec![rho0]
    } else {
        a.rho
            .iter()
            .map(|&r| Centi((r * 100.0).round() as u16))
            .collect()
    };
    let rescues: Vec<Option<Centi>> = if a.rescue.is_empty() {
        vec![rescue0]
    } else {
        a.rescue
            .iter()
            .map(|t| match t.as_str() {
                "none" => Ok(None),
                v => v
                    .parse::<f64>()
                    .map(|r| Some(Centi((r * 100.0).round() as u16)))
                    .map_err(|_| {
                        CliError::Usage(format!("--rescue: `{v}` is not a number or `none`"))
                    }),
            })
            .collect::<Result<_, _>>()?
    };
    let mut out = Vec::new();
    for &stride in &strides {
        for &rho in &rhos {
            for &rescue in &rescues {
                let spec = Spec {
                    proposal: Proposal::Sampled {
                        stride,
                        rho,
                        rescue,
                        exact_below: 0,
                    },
                    ..base
                };
                spec.validate()?;
                out.push(spec);
            }
        }
    }
    Ok(out)
}

fn views(a: &RoutesArgs) -> CmdResult {
    let profiles = a
        .profile
        .iter()
        .map(|p| parse_profile(p))
        .collect::<Result<Vec<_>, _>>()?;
    let strides = if a.stride.is_empty() {
        vec![128]
    } else {
        a.stride.clone()
    };
    let rhos: Vec<Centi> = if a.rho.is_empty() {
        vec![Centi(150)]
    } else {
        a.rho
            .iter()
            .map(|&r| Centi((r * 100.0).round() as u16))
            .collect()
    };
    report::line(format!(
        "{} rows ending at {}, K = {}, seed {}; primary boundary only (no rescue):",
        a.rows, a.width, a.k, a.seed
    ));
    report::line(format!(
        "{:<12} {:>6} {:>5} {:>4} {:>10} {:>7}",
        "profile", "stride", "rho", "run", "underfill", "rows"
    ));
    for profile in &profiles {
        for &stride in &strides {
            if !stride.is_power_of_two() {
                return Err(CliError::Usage(format!(
                    "--stride {stride} is not a power of two"
                )));
            }
            for &rho in &rhos {
                for &run in &a.views {
                    let view = ViewShape {
                        stride,
                        run: run.max(1),
                        rho,
                    };
                    let (rate, rows) =
                        view_underfill(*profile, a.rows, a.width, a.seed, a.k as u32, view)?;
                    report::line(format!(
                        "{:<12} {:>6} {:>5} {:>4} {:>9.2}% {:>7}",
                        profile.name(),
                        stride,
                        rho.to_string(),
                        run,
                        100.0 * rate,
                        rows
                    ));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

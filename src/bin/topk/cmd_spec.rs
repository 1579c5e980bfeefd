//! `topk spec`: presets and the canonical spec text.

use crate::args::lookup_preset;
use crate::{report, CmdResult};
use clap::{ArgGroup, Args};
use std::process::ExitCode;
use topk_dsl::{Spec, PRESETS};

const EXAMPLES: &str = "\
Examples:
  topk spec --list
  topk spec --preset persistent-s128-rescue
  topk spec --parse 'k=1024,propose=sampled(stride=64,rho=1.5)'";

/// Show presets, or check spec text and print its canonical form
///
/// A spec describes one specialized selector: rank K, score dtype, how rows map onto the GPU,
/// how the coarse boundary is proposed, and the key widths. Its canonical text is the name used
/// by --spec, the kernel cache and the autotune records.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
#[command(group(ArgGroup::new("what").required(true).args(["list", "preset", "parse"])))]
pub struct SpecArgs {
    /// List every preset with its description and canonical text
    #[arg(long)]
    list: bool,
    /// Print one preset's canonical text, then its description
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    /// Validate spec text and print its canonical form (omitted fields take their defaults)
    #[arg(long, value_name = "TEXT")]
    parse: Option<String>,
}

pub fn run(a: SpecArgs) -> CmdResult {
    if a.list {
        let width = PRESETS.iter().map(|p| p.name.len()).max().unwrap_or(0);
        for p in PRESETS {
            report::line(format_args!("{:width$}  {}", p.name, p.about));
            report::line(format_args!("{:width$}  {}", "", p.spec));
        }
        if PRESETS.is_empty() {
            report::line("no presets defined");
        }
    } else if let Some(name) = &a.preset {
        let spec = lookup_preset(name)?;
        let about = PRESETS
            .iter()
            .find(|p| p.name == name)
            .map_or("", |p| p.about);
        report::line(spec);
        report::line(about);
    } else if let Some(text) = &a.parse {
        let spec = Spec::parse(text)?;
        spec.validate()?;
        report::line(spec);
    }
    Ok(ExitCode::SUCCESS)
}

//! `topk codegen`: the CUDA source generated for a spec.

use crate::args::lookup_preset;
use crate::{report, CmdResult};
use clap::{ArgGroup, Args};
use std::process::ExitCode;
use topk_dsl::Spec;

const EXAMPLES: &str = "\
Examples:
  topk codegen --preset persistent-s128-rescue > select.cu
  topk codegen --spec 'k=512,map=rowlocal(streaming),propose=exact,threads=1024'
  topk codegen --generator > generate.cu";

/// Print the CUDA C++ source generated for a spec
///
/// The source is self-contained (no #include) and compiles with NVRTC alone; its entry point
/// carries the spec's hash. With --generator, prints the data-generator kernel instead, which
/// produces the same matrices on the GPU as `topk gen` does on the CPU.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
#[command(group(ArgGroup::new("what").required(true).args(["spec", "preset", "generator"])))]
pub struct CodegenArgs {
    /// Spec text (omitted fields take their defaults)
    #[arg(long, value_name = "TEXT")]
    spec: Option<String>,
    /// A named preset (see `topk spec --list`)
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    /// Print the data-generator kernel source
    #[arg(long)]
    generator: bool,
}

pub fn run(a: CodegenArgs) -> CmdResult {
    let spec = match (&a.spec, &a.preset) {
        (Some(text), _) => Spec::parse(text)?,
        (None, Some(name)) => lookup_preset(name)?,
        (None, None) => {
            report::line(topk_codegen::generator::generator_source());
            return Ok(ExitCode::SUCCESS);
        }
    };
    let kernel = topk_codegen::generate(&spec)?;
    report::line(kernel.source.trim_end());
    Ok(ExitCode::SUCCESS)
}

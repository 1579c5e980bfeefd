//! `topk kernels`: the kernels every preset generates, and whether NVRTC compiles them.

use crate::{progress, report, CmdResult, EXIT_FAILED_CHECK};
use clap::Args;
use std::process::ExitCode;
use topk::cli::CliError;
use topk_dsl::PRESETS;
use topk_runtime::cuda::nvrtc::{self, Arch};

const EXAMPLES: &str = "\
Examples:
  topk kernels
  topk kernels --check
  topk kernels --check --arch sm_80

--check needs libnvrtc but no GPU; if it is not found, install it with
`pip install nvidia-cuda-nvrtc==13.0.*` and add its nvidia/cu13/lib folder to LD_LIBRARY_PATH.";

/// List the kernel of every preset, or compile each one with NVRTC
///
/// Without --check, prints one line per preset: its name, family, entry point and source size.
/// With --check, compiles every preset for --arch and prints `ok <name> <entry> <ms>`, or the
/// compiler log on failure; a preset the architecture cannot run (thread-block clusters before
/// sm_90) prints `skip <name> <entry>: <why>`. Exits with 1 if any kernel fails to compile.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct KernelsArgs {
    /// Compile every preset with NVRTC (no GPU needed)
    #[arg(long)]
    check: bool,
    /// GPU architecture to compile for, sm_<major><minor>[a]
    #[arg(
        long,
        value_name = "ARCH",
        default_value = "sm_90a",
        requires = "check"
    )]
    arch: String,
}

pub fn run(a: KernelsArgs) -> CmdResult {
    if !a.check {
        for p in PRESETS {
            match topk_codegen::generate(&p.spec) {
                Ok(k) => report::line(format_args!(
                    "{} {} {} {} bytes",
                    p.name,
                    k.family.name(),
                    k.entry,
                    k.source.len()
                )),
                Err(e) => report::line(format_args!("{} fails: {e}", p.name)),
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let arch: Arch = a.arch.parse()?;
    nvrtc::nvrtc_available()?;
    nvrtc::check_arch_supported(&arch)?;
    let mut failed = 0usize;
    for p in PRESETS {
        let kernel = match topk_codegen::generate(&p.spec) {
            Ok(k) => k,
            Err(e) => {
                failed += 1;
                report::line(format_args!("fail {}: {e}", p.name));
                continue;
            }
        };
        if arch.major < kernel.family.min_cc_major() {
            report::line(format_args!(
                "skip {} {}: the {} family needs sm_{}0 or newer",
                p.name,
                kernel.entry,
                kernel.family.name(),
                kernel.family.min_cc_major()
            ));
            continue;
        }
        let bar = progress::spinner(&format!("compiling {}", p.name));
        let compiled = nvrtc::compile(&kernel.source, &kernel.entry, &arch);
        bar.finish_and_clear();
        match compiled {
            Ok(c) => report::line(format_args!(
                "ok {} {} {:.0}",
                p.name, kernel.entry, c.millis
            )),
            Err(topk_runtime::Error::Compile { log, .. }) => {
                failed += 1;
                report::line(format_args!(
                    "fail {} {}\n{}",
                    p.name,
                    kernel.entry,
                    log.trim_end()
                ));
            }
            Err(e) => return Err(CliError::Runtime(e)),
        }
    }
    if failed > 0 {
        eprintln!("error: {failed} kernel(s) failed to compile for {arch}");
        return Ok(ExitCode::from(EXIT_FAILED_CHECK));
    }
    Ok(ExitCode::SUCCESS)
}

//! `topk plan`: what the planner chooses for a shape, before anything runs.

use crate::args::SpecChoice;
use crate::{report, CmdResult};
use clap::Args;
use std::process::ExitCode;
use topk_runtime::cuda::plan::{default_spec, persistent_tail_rho};
use topk_runtime::cuda::{Gpu, Plan, PlanRequest, SpecSource};

const EXAMPLES: &str = "\
Examples:
  topk plan --k 2048 --rows 4096 --width 262144
  topk plan --k 2048 --rows 512 --width 131072 --preset persistent-s64
  topk plan --k 512 --rows 64 --width 16384 --pitch 16400";

/// Show the kernel, launch geometry and workspace the planner picks for a shape
///
/// Plans are made from capacities (K, rows M_cap, width N, row pitch) and the device, never
/// from live lengths, so one plan serves every replay of a captured graph. On a machine with a
/// usable GPU this compiles the kernel (through the caches) and reports grid, shared memory,
/// workspace bytes, compile time and whether the cache hit; without one it shows the spec and
/// the kernel's own layout.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct PlanArgs {
    /// Rank K
    #[arg(long, value_parser = crate::args::parse_k)]
    k: usize,
    /// Row capacity M_cap
    #[arg(long)]
    rows: u32,
    /// Allocated row width N
    #[arg(long)]
    width: u32,
    /// Row pitch in elements [default: the width]
    #[arg(long)]
    pitch: Option<u64>,
    #[command(flatten)]
    spec: SpecChoice,
}

pub fn run(a: PlanArgs) -> CmdResult {
    let spec = a.spec.resolve(a.k)?;
    let chosen = spec.unwrap_or_else(|| default_spec(a.k as u32, a.rows, a.width));
    let kernel = topk_codegen::generate(&chosen)?;
    report::line(format!(
        "spec        {chosen} (without a device: given, or the default map for compute \
         capability 9.0+)"
    ));
    report::line(format!("family      {}", kernel.family.name()));
    report::line(format!("entry       {}", kernel.entry));
    report::line(format!("block       {} threads", kernel.layout.threads));
    report::line(format!(
        "shared      {} bytes per CTA (frontier buffers of {} and {} pairs)",
        kernel.layout.dynamic_smem, kernel.layout.frontier_cap0, kernel.layout.frontier_cap1
    ));
    // The tail margin is sized to the device's pool, which only a device can tell.
    if let (None, Some(rho)) = (spec, persistent_tail_rho(a.width, &chosen)) {
        report::line(format!(
            "tail        on a GPU, calls of more rows than the worker pool give its last wave \
             rho = {rho}: the planner adds tail={rho}@POOL (POOL = SMs x CTAs per SM)"
        ));
    }
    if !Gpu::available() {
        report::line("device      none usable: grid, workspace and compile time need a GPU");
        return Ok(ExitCode::SUCCESS);
    }
    let gpu = Gpu::open(0)?;
    let mut request = PlanRequest::new(a.k as u32, a.rows, a.width);
    // Without --spec/--preset the planner chooses: autotune record, else the default map.
    request.spec = spec;
    if let Some(p) = a.pitch {
        request.pitch = p;
    }
    let plan = Plan::new(&gpu, request)?;
    let props = gpu.props();
    report::line(format!(
        "device      {} (cc {}.{}, {} SMs)",
        props.name, props.cc_major, props.cc_minor, props.sms
    ));
    report::line(format!(
        "spec used   {} ({})",
        plan.spec,
        describe(&plan.source)
    ));
    match &plan.stages {
        Some(stages) => report::line(format!(
            "grid        {} chunk CTAs of {} scores per row, a chain of stage kernels ({} per SM)",
            stages.chunks, stages.chunk_len, plan.ctas_per_sm
        )),
        None => {
            report::line(format!(
                "grid        {} CTAs ({} per SM)",
                plan.grid, plan.ctas_per_sm
            ));
            report::line(format!(
                "spill       {} pairs per worker and buffer",
                plan.spill_cap
            ));
        }
    }
    report::line(format!("workspace   {} bytes", plan.workspace_bytes));
    report::line(format!(
        "compile     {:.1} ms ({:?})",
        plan.loaded.compile_ms, plan.loaded.outcome
    ));
    Ok(ExitCode::SUCCESS)
}

fn describe(source: &SpecSource) -> String {
    match source {
        SpecSource::Given => "given".into(),
        SpecSource::Tuned => "autotune record".into(),
        SpecSource::Default => "default map; no autotune record".into(),
        SpecSource::DefaultIgnoring(why) => format!("default map; warning: {why}"),
    }
}

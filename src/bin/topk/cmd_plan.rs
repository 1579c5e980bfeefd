//! `topk plan`: what the planner chooses for a shape, before anything runs; with `--table`, the
//! default map over a grid of shapes.

use crate::args::SpecChoice;
use crate::{report, CmdResult};
use clap::{Args, ValueEnum};
use std::process::ExitCode;
use topk::cli::CliError;
use topk_runtime::cuda::{Gpu, Plan, PlanRequest, SpecSource};
use topk_runtime::policy::{self, DeviceFacts, Grid, Shape};

const EXAMPLES: &str = "\
Examples:
  topk plan --k 2048 --rows 4096 --width 262144
  topk plan --k 2048 --rows 512 --width 131072 --preset persistent-s64
  topk plan --k 512 --rows 64 --width 16384 --pitch 16400
  topk plan --table
  topk plan --table --k 2048 --rows 1,8,1024 --width 262144,1048576 --device-facts h200";

/// Show the kernel, launch geometry and workspace the planner picks for a shape
///
/// Plans are made from capacities (K, rows M_cap, width N, row pitch) and the device, never
/// from live lengths, so one plan serves every replay of a captured graph. Without a spec the
/// spec is the default map's (bench/RESULTS.md measured its rules) on the device's facts: SMs,
/// compute capability, CTAs per SM, resident thread-block clusters. On a machine with a usable
/// GPU this compiles the kernel (through the caches) and reports grid, shared memory,
/// workspace bytes, compile time and whether the cache hit; without one it shows the spec on
/// the H200's facts and the kernel's own layout.
///
/// With --table it prints the default map over a grid of shapes instead, one line per
/// (K, rows, width): the rule that takes the shape and the spec's canonical text. --k, --rows
/// and --width then take comma lists [default: K 256,512,2048,4096; rows
/// 1,7,8,16,32,512,1024,2048,8192; widths 8K-4M, 11 of them].
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct PlanArgs {
    /// Rank K
    #[arg(long, value_delimiter = ',', value_parser = crate::args::parse_k, required_unless_present = "table")]
    k: Vec<usize>,
    /// Row capacity M_cap
    #[arg(long, value_delimiter = ',', required_unless_present = "table")]
    rows: Vec<u32>,
    /// Allocated row width N
    #[arg(long, value_delimiter = ',', required_unless_present = "table")]
    width: Vec<u32>,
    /// Row pitch in elements [default: the width]
    #[arg(long, conflicts_with = "table")]
    pitch: Option<u64>,
    /// Print the default map over a grid of shapes
    #[arg(long)]
    table: bool,
    /// The device facts the default map is chosen on: `auto` reads the GPU's where one is
    /// usable, else takes the H200's; `h200` the H200's the map was measured on; `gpu` the
    /// GPU's (an error without one)
    #[arg(long, value_enum, default_value_t = FactsChoice::Auto, value_name = "FACTS")]
    device_facts: FactsChoice,
    #[command(flatten)]
    spec: SpecChoice,
}

/// Whose facts the default map is chosen on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum FactsChoice {
    /// The GPU's where one is usable, else the H200's
    Auto,
    /// The NVIDIA H200's (132 SMs, compute capability 9.0)
    H200,
    /// The GPU's; an error without a usable GPU
    Gpu,
}

/// The facts `choice` names, with a few words on where they came from.
fn facts(choice: FactsChoice) -> Result<(DeviceFacts, String), CliError> {
    let h200 = || (DeviceFacts::h200(), "the NVIDIA H200's".to_string());
    match choice {
        FactsChoice::H200 => Ok(h200()),
        FactsChoice::Auto if !Gpu::available() => Ok(h200()),
        FactsChoice::Auto | FactsChoice::Gpu => {
            let gpu = Gpu::open(0)?;
            Ok((gpu.facts(), format!("{}'s", gpu.props().name)))
        }
    }
}

pub fn run(a: PlanArgs) -> CmdResult {
    if a.table {
        return table(&a);
    }
    let one = |name: &str, n: usize| match n {
        1 => Ok(()),
        _ => Err(CliError::Usage(format!(
            "--{name} takes one value here; lists are for --table"
        ))),
    };
    one("k", a.k.len())?;
    one("rows", a.rows.len())?;
    one("width", a.width.len())?;
    let (k, rows, width) = (a.k[0], a.rows[0], a.width[0]);
    let spec = a.spec.resolve(k)?;
    let (facts, whose) = facts(a.device_facts)?;
    let shape = Shape {
        k: k as u32,
        m_cap: rows,
        width,
    };
    let (rule, default) = policy::choose(&facts, &shape);
    let chosen = spec.unwrap_or(default);
    let kernel = topk_codegen::generate(&chosen)?;
    match spec {
        Some(_) => report::line(format!("spec        {chosen} (given)")),
        None => {
            report::line(format!(
                "spec        {chosen} (the default map on {whose} facts: {facts})"
            ));
            report::line(format!(
                "rule        {}: {} (bench/RESULTS.md: {})",
                rule.name, rule.why, rule.measured
            ));
        }
    }
    report::line(format!("family      {}", kernel.family.name()));
    report::line(format!("entry       {}", kernel.entry));
    report::line(format!("block       {} threads", kernel.layout.threads));
    report::line(format!(
        "shared      {} bytes per CTA (frontier buffers of {} and {} pairs)",
        kernel.layout.dynamic_smem, kernel.layout.frontier_cap0, kernel.layout.frontier_cap1
    ));
    if !Gpu::available() {
        report::line("device      none usable: grid, workspace and compile time need a GPU");
        return Ok(ExitCode::SUCCESS);
    }
    let gpu = Gpu::open(0)?;
    let mut request = PlanRequest::new(k as u32, rows, width);
    // Without --spec/--preset the planner chooses: autotune record, else the default map.
    request.spec = spec;
    if let Some(p) = a.pitch {
        request.pitch = p;
    }
    let plan = Plan::new(&gpu, request)?;
    report_plan(&gpu, &plan);
    Ok(ExitCode::SUCCESS)
}

/// `topk plan --table`: the default map over the grid the lists give.
fn table(a: &PlanArgs) -> CmdResult {
    if a.spec.spec.is_some() || a.spec.preset.is_some() {
        return Err(CliError::Usage(
            "--table prints the default map; drop --spec/--preset".into(),
        ));
    }
    let (facts, whose) = facts(a.device_facts)?;
    let mut grid = Grid::default();
    if !a.k.is_empty() {
        grid.ks = a.k.iter().map(|&k| k as u32).collect();
    }
    if !a.rows.is_empty() {
        grid.rows = a.rows.clone();
    }
    if !a.width.is_empty() {
        grid.widths = a.width.clone();
    }
    report::line(format!("# device facts: {whose}"));
    for line in policy::map_table(&facts, &grid).lines() {
        report::line(line);
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan's device, spec, grid, workspace and compile.
fn report_plan(gpu: &Gpu, plan: &Plan) {
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
}

fn describe(source: &SpecSource) -> String {
    match source {
        SpecSource::Given => "given".into(),
        SpecSource::Tuned => "autotune record".into(),
        SpecSource::Default => "default map; no autotune record".into(),
        SpecSource::DefaultIgnoring(why) => format!("default map; warning: {why}"),
    }
}

//! `topk select`: Top-K indices of every row of a score file.

use crate::args::{parse_k, BackendChoice, SpecChoice};
use crate::call_args::{self, OutputArgs, PriorArgs, RowArgs};
use crate::call_inputs::{self, CallFiles, ScoreFile};
use crate::{inputs, progress, report, select_call, CmdResult};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use topk::backend;
use topk::cli::CliError;
use topk_dsl::{Dtype, Spec};

const EXAMPLES: &str = "\
Examples:
  topk gen --profile indexer --rows 64 --width 262144 --out s.npy --lengths-out l.npy
  topk select --scores s.npy --lengths l.npy --k 2048 --out i.npy
  topk select --scores s.npy --k 64 --out i.npy --backend cpu --preset persistent-exact
  topk select --scores run.safetensors --tensor scores --k 2048 --out i.npy
  topk select --scores s.npy --lengths l.npy --k 2048 --out i.npy --backend cpu --ranks 4
  topk select --scores logits.safetensors --starts ks.npy --ends ke.npy --relative-to-start \
      --k 2048 --out i.npy --values-out v.npy --sorted --deterministic
  topk select --scores s.npy --seq-lens seq.npy --next-n 2 --page-table pt.npy --page-size 64 \
      --k 2048 --out slots.npy
  topk select --scores bits.npy --spec dtype=bf16 --k 64 --out i.npy   # uint16 bfloat16 bits

Scores: float32; float16 (.npy or .safetensors F16); bfloat16 (.safetensors BF16, or a .npy of
its uint16 bit patterns with --spec dtype=bf16). Values come back in the scores' dtype (a
bfloat16 .npy as uint16 bit patterns). Values, --sorted, --deterministic, windows, decode rows
and transforms run on the GPU for float32 scores; the 16-bit dtypes run on the CPU backend
(`--backend auto` takes it and says why).";

/// Select the K largest valid scores of every row and write their indices
///
/// Reads a [rows, width] score matrix (.npy, or .safetensors with --tensor) and where each
/// row's valid scores lie (lengths, windows or decode rows), and writes an int32 [rows, K] .npy
/// of indices: for a row of L > K valid scores, the K indices of its largest scores in no
/// particular order (ties at rank K broken any way) unless --sorted / --deterministic; for
/// L <= K, its L indices followed by -1; then through --offsets or --page-table when given.
/// NaN scores are rejected; +-inf, -0.0 and subnormals are valid. The output files appear only
/// if selection succeeds.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct SelectArgs {
    /// Score matrix: float32, float16 or bfloat16, 2-D [rows, width], C order (.npy or
    /// .safetensors)
    #[arg(long, value_name = "FILE")]
    scores: PathBuf,
    /// Tensor to read from a .safetensors score file [default: its only tensor, or `scores`]
    #[arg(long, value_name = "NAME")]
    tensor: Option<String>,
    #[command(flatten)]
    rows: RowArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// Also write the selected scores, [rows, K] in the scores' dtype (-inf beside -1), to
    /// this .npy (or .safetensors, tensor `values`)
    #[arg(long, value_name = "FILE")]
    values_out: Option<PathBuf>,
    #[command(flatten)]
    prior: PriorArgs,
    /// Number of indices to select per row (1 to 16384)
    #[arg(long, value_parser = parse_k)]
    k: usize,
    /// Where to write the int32 [rows, K] index matrix (.npy)
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Where to run the selection
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    #[command(flatten)]
    spec: SpecChoice,
    /// Select as G context-parallel ranks would, each holding ceil(width / G) contiguous
    /// positions of every row, simulated on the CPU backend (same output contract, global
    /// indices). For replaying what a sharded deployment computed
    #[arg(long, value_name = "G")]
    ranks: Option<usize>,
}

pub fn run(a: SelectArgs) -> CmdResult {
    let io = call_args::interface(
        &a.rows,
        &a.output,
        a.values_out.is_some(),
        a.prior.prior(),
        a.prior.boundary_out.is_some(),
    );
    if let Some(ranks) = a.ranks {
        if !io.is_default() {
            return Err(CliError::Usage(
                "--ranks selects with --lengths only (no windows, decode rows, transforms, \
                 values, --sorted or --deterministic)"
                    .into(),
            ));
        }
        return run_sharded(&a, ranks);
    }
    let file = call_inputs::open_scores(&a.scores, a.tensor.as_deref(), named_dtype(&a.spec)?)?;
    if file.dtype != Dtype::F32 || !io.is_default() || call_args::names_interface(&a.spec) {
        let spec = call_args::call_spec(
            &a.spec,
            a.k,
            || backend::default_spec(a.k, file.width),
            file.dtype,
            io,
        )?;
        return run_call(&a, file, spec);
    }
    let spec = a.spec.resolve(a.k)?;
    inputs::check_output_path("--out", &a.out)?;
    let chosen = backend::resolve(a.backend.as_str())?;
    let problem = inputs::load(&a.scores, a.tensor.as_deref(), a.rows.lengths.as_deref())?;
    if a.backend == BackendChoice::Auto {
        match &chosen.fallback_reason {
            Some(why) => eprintln!("backend: {} ({why})", chosen.backend),
            None => eprintln!("backend: {}", chosen.backend),
        }
    }
    let (rows, width) = (problem.scores.rows, problem.scores.width);
    let mut out = vec![-1i32; rows * a.k];
    let bar = progress::spinner("selecting");
    let selected = backend::select(
        chosen.backend,
        spec.as_ref(),
        a.k,
        &problem.matrix(),
        &mut out,
        a.k,
    );
    bar.finish_and_clear();
    let selection = selected.map_err(inputs::locate_in(&a.scores))?;
    topk::io::npy::write(&a.out, &[rows, a.k], &out).map_err(CliError::Output)?;
    report::line(format_args!(
        "selected k={} of {rows} rows x {width} on {} in {}{} ({:.2} GB/s of valid scores); routes: {} -> {}",
        a.k,
        chosen.backend,
        report::millis(selection.elapsed),
        match chosen.backend {
            backend::Backend::Cuda => " with copies",
            backend::Backend::Cpu => "",
        },
        report::gbps(problem.valid_bytes(), selection.elapsed),
        selection.stats,
        a.out.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// `--ranks G`: the context-parallel selector with its ranks simulated in process.
fn run_sharded(a: &SelectArgs, ranks: usize) -> CmdResult {
    if a.backend == BackendChoice::Cuda {
        return Err(CliError::Usage(
            "--ranks runs on the CPU backend (use --backend cpu); on GPUs the context-parallel \
             selector is the Rust API `topk_runtime::cuda::sharded::ShardedSelector` \
             (timed by topk-bench's context-parallel program)"
                .into(),
        ));
    }
    let spec = a.spec.resolve(a.k)?;
    inputs::check_output_path("--out", &a.out)?;
    let problem = inputs::load(&a.scores, a.tensor.as_deref(), a.rows.lengths.as_deref())?;
    let matrix = problem.matrix();
    let (rows, width) = (matrix.rows, matrix.width);
    let sharding = topk::runtime::sharding::Sharding::covering(width, ranks)
        .map_err(|e| CliError::Usage(format!("--ranks {ranks}: {e}")))?;
    let mut out = vec![-1i32; rows * a.k];
    let bar = progress::spinner("selecting");
    let selected = backend::select_sharded(spec.as_ref(), a.k, sharding, &matrix, &mut out, a.k);
    bar.finish_and_clear();
    let selection = selected.map_err(inputs::locate_in(&a.scores))?;
    topk::io::npy::write(&a.out, &[rows, a.k], &out).map_err(CliError::Output)?;
    report::line(format_args!(
        "selected k={} of {rows} rows x {width} as {ranks} ranks of {} positions (cpu, simulated) in {}; routes: {} -> {}",
        a.k,
        sharding.shard_width,
        report::millis(selection.elapsed),
        selection.stats,
        a.out.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// The dtype `--spec` names, if it names one.
pub fn named_dtype(choice: &SpecChoice) -> Result<Option<Dtype>, CliError> {
    match &choice.spec {
        Some(text) if choice.names("dtype") => Ok(Some(Spec::parse(text)?.dtype)),
        _ => Ok(None),
    }
}

/// A call through the interface flags or of a 16-bit dtype: on the GPU for the specs the
/// kernels generate, else on the CPU backend, which `--backend auto` takes with the reason and
/// `--backend cuda` refuses.
fn run_call(a: &SelectArgs, file: ScoreFile, spec: Spec) -> CmdResult {
    inputs::check_output_path("--out", &a.out)?;
    if let Some(path) = &a.values_out {
        inputs::check_output_path("--values-out", path)?;
    }
    if let Some(path) = &a.prior.boundary_out {
        inputs::check_output_path("--boundary-out", path)?;
    }
    let chosen = call_args::backend_for(Some(&spec), a.backend)?;
    let shape = (file.rows, file.width);
    let mut files = CallFiles::read(&a.rows, &a.output, file.rows, file.width)?;
    if let Some(path) = &a.prior.prior {
        files.read_prior(path, file.rows)?;
    }
    if a.backend == BackendChoice::Auto {
        match &chosen.fallback_reason {
            Some(why) => eprintln!("backend: {} ({why})", chosen.backend),
            None => eprintln!("backend: {}", chosen.backend),
        }
    }
    let scores = file.read()?;
    let values = a.values_out.as_deref();
    let outputs = select_call::Outputs {
        indices: &a.out,
        values,
        boundary: a.prior.boundary_out.as_deref(),
    };
    let done = select_call::select(
        &spec,
        scores,
        shape,
        &files,
        &a.scores,
        outputs,
        chosen.backend,
    )?;
    report::line(format_args!(
        "selected k={} of {} rows x {} ({}) on {}{} in {} ({:.2} GB/s of valid scores); routes: {} -> {}{}{}",
        a.k,
        shape.0,
        shape.1,
        spec.dtype,
        chosen.backend,
        match chosen.backend {
            backend::Backend::Cuda => " with copies",
            backend::Backend::Cpu => "",
        },
        report::millis(done.elapsed),
        report::gbps(done.valid_bytes, done.elapsed),
        done.stats,
        a.out.display(),
        values.map_or(String::new(), |v| format!(", values -> {}", v.display())),
        outputs.boundary.map_or(String::new(), |b| format!(", boundaries -> {}", b.display()))
    ));
    Ok(ExitCode::SUCCESS)
}

//! `topk select`: Top-K indices of every row of a score file.

use crate::args::{parse_k, BackendChoice, SpecChoice};
use crate::error::CliError;
use crate::{inputs, progress, report, CmdResult};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use topk::backend;

const EXAMPLES: &str = "\
Examples:
  topk gen --profile indexer --rows 64 --width 262144 --out s.npy --lengths-out l.npy
  topk select --scores s.npy --lengths l.npy --k 2048 --out i.npy
  topk select --scores s.npy --k 64 --out i.npy --backend cpu --preset persistent-exact
  topk select --scores run.safetensors --tensor scores --k 2048 --out i.npy
  topk select --scores s.npy --lengths l.npy --k 2048 --out i.npy --backend cpu --ranks 4";

/// Select the K largest valid scores of every row and write their indices
///
/// Reads a float32 [rows, width] score matrix (.npy, or .safetensors with --tensor) and
/// optional valid lengths, and writes an int32 [rows, K] .npy of indices: for a row of length
/// L > K, the K indices of its largest scores in no particular order (ties at rank K broken
/// any way); for L <= K, every index 0..L followed by -1. NaN scores are rejected; +-inf,
/// -0.0 and subnormals are valid. The output file appears only if selection succeeds.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct SelectArgs {
    /// Score matrix: float32, 2-D [rows, width], C order (.npy or .safetensors)
    #[arg(long, value_name = "FILE")]
    scores: PathBuf,
    /// Tensor to read from a .safetensors score file [default: its only tensor, or `scores`]
    #[arg(long, value_name = "NAME")]
    tensor: Option<String>,
    /// Valid length of each row: int32 or int64, 1-D, one per row [default: full width]
    #[arg(long, value_name = "FILE")]
    lengths: Option<PathBuf>,
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
    if let Some(ranks) = a.ranks {
        return run_sharded(&a, ranks);
    }
    let spec = a.spec.resolve(a.k)?;
    inputs::check_output_path("--out", &a.out)?;
    let chosen = backend::resolve(a.backend.as_str())?;
    let problem = inputs::load(&a.scores, a.tensor.as_deref(), a.lengths.as_deref())?;
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
        report::routes(&selection.stats),
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
             (examples/06-context-parallel.rs)"
                .into(),
        ));
    }
    let spec = a.spec.resolve(a.k)?;
    inputs::check_output_path("--out", &a.out)?;
    let problem = inputs::load(&a.scores, a.tensor.as_deref(), a.lengths.as_deref())?;
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
        report::routes(&selection.stats),
        a.out.display()
    ));
    Ok(ExitCode::SUCCESS)
}

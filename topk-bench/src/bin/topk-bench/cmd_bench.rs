//! `topk-bench bench`: time the selection alone on one input, verified.

use crate::args::{parse_k, parse_profile, BackendChoice, SpecChoice};
use crate::{report, CmdResult, EXIT_FAILED_CHECK};
use clap::{ArgGroup, Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use topk::backend::{self, Backend, Benchmark, Repetitions, Resolved};
use topk::cli::CliError;
use topk_bench::FLOOR_READ_BYTES_PER_S;
use topk_dsl::Spec;
use topk_runtime::cuda::{DeviceMatrix, Gpu};
use topk_runtime::data::shapes::causal_window;
use topk_runtime::ScoreMatrix;

const EXAMPLES: &str = "\
Examples:
  topk-bench bench --backend cpu --profile indexer --rows 64 --width 262144 --k 2048
  topk-bench bench --backend cuda --profile iid --rows 2048 --width 262144 --k 2048 --json
  topk-bench bench --backend cpu --scores s.npy --lengths l.npy --k 2048 --preset persistent-s64";

/// Time the selection alone, without file I/O, and verify what was timed
///
/// Runs --warmup untimed selections, then --iters timed ones, and reports the median; on the
/// GPU each timed iteration is a round of CUDA graph replays measured with events. The output
/// of the timed runs is checked against the exact Top-K contract: if it is not exact, the
/// command exits with 1. Throughput counts the valid scores (sum of lengths x 4 bytes).
#[derive(Args)]
#[command(after_help = EXAMPLES)]
#[command(group(ArgGroup::new("input").required(true).args(["scores", "profile"])))]
pub struct BenchArgs {
    /// Where to run the selection
    #[arg(long, value_enum)]
    backend: BackendChoice,
    /// Score matrix to time: float32, 2-D [rows, width], C order (.npy or .safetensors)
    #[arg(long, value_name = "FILE")]
    scores: Option<PathBuf>,
    /// Tensor to read from a .safetensors score file
    #[arg(long, value_name = "NAME", requires = "scores")]
    tensor: Option<String>,
    /// Valid lengths for --scores (int32 or int64, 1-D) [default: full width]
    #[arg(long = "lengths", value_name = "FILE", requires = "scores")]
    lengths_file: Option<PathBuf>,
    /// Generate the input instead: a profile name as in `topk gen`
    #[arg(long, value_name = "NAME", requires_all = ["rows", "width"])]
    profile: Option<String>,
    /// Rows of the generated input
    #[arg(long, requires = "profile")]
    rows: Option<usize>,
    /// Width of the generated input
    #[arg(long, requires = "profile")]
    width: Option<usize>,
    /// Seed of the generated input
    #[arg(long, default_value_t = 0, requires = "profile")]
    seed: u64,
    /// Valid lengths of the generated rows
    #[arg(long = "shape", value_enum, default_value_t = LengthsKind::Causal, requires = "profile")]
    shape: LengthsKind,
    /// Length of the first generated row; row r gets this plus r (a causal window that ends
    /// before the width, like a call of a chunked prefill)
    #[arg(long, value_name = "N", requires = "profile", conflicts_with = "shape")]
    first_length: Option<usize>,
    /// Number of indices to select per row (1 to 16384)
    #[arg(long, value_parser = parse_k)]
    k: usize,
    #[command(flatten)]
    spec: SpecChoice,
    /// Timed iterations
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,
    /// Untimed iterations first
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Print one JSON object instead of a table
    #[arg(long)]
    json: bool,
}

/// What was timed: its shape and where it came from.
struct Timed {
    rows: usize,
    width: usize,
    valid_bytes: u64,
    source: String,
}

pub fn run(a: BenchArgs) -> CmdResult {
    let spec = a.spec.resolve(a.k)?;
    let chosen = a.backend.resolve_for(spec.as_ref())?;
    if let Some(why) = &chosen.fallback_reason {
        eprintln!("backend: {} ({why})", chosen.backend);
    }
    let reps = Repetitions {
        warmup: a.warmup,
        iters: a.iters as usize,
    };
    let (timed, measured) = match (&a.scores, &a.profile) {
        (Some(path), _) => measure_file(&a, path, &chosen, spec.as_ref(), reps)?,
        (None, Some(name)) => measure_generated(&a, name, &chosen, spec.as_ref(), reps)?,
        (None, None) => unreachable!("clap requires --scores or --profile"),
    };
    if a.json {
        report::line(json(&a, chosen.backend, &timed, &measured));
    } else {
        print_table(a.k, chosen.backend, &timed, &measured);
    }
    if measured.verdict.exact {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "error: the timed output is not exact: {} of {} rows violate the Top-K contract",
            measured.verdict.rows_violating, timed.rows
        );
        for v in &measured.verdict.violations {
            eprintln!("  {v}");
        }
        Ok(ExitCode::from(EXIT_FAILED_CHECK))
    }
}

/// Times the selection of `--scores` (with `--lengths`, else full rows).
fn measure_file(
    a: &BenchArgs,
    path: &Path,
    chosen: &Resolved,
    spec: Option<&Spec>,
    reps: Repetitions,
) -> Result<(Timed, Benchmark), CliError> {
    let input = |source| CliError::Input {
        flag: "--scores",
        source,
    };
    let scores = topk::io::read_scores(path, a.tensor.as_deref(), &mut |_, _| {}).map_err(input)?;
    let lengths = match &a.lengths_file {
        Some(file) => checked_lengths(file, scores.rows, scores.width)?,
        None => vec![i32::try_from(scores.width).unwrap_or(i32::MAX); scores.rows],
    };
    let timed = Timed {
        rows: scores.rows,
        width: scores.width,
        valid_bytes: lengths.iter().map(|&l| l as u64 * 4).sum(),
        source: path.display().to_string(),
    };
    let matrix = ScoreMatrix {
        data: &scores.data,
        rows: scores.rows,
        width: scores.width,
        pitch: scores.width,
        lengths: &lengths,
    };
    let measured = backend::benchmark(chosen.backend, spec, a.k, &matrix, reps).map_err(|e| {
        match e {
            // The selector names the row and column; the file is ours to name.
            topk_runtime::Error::NaN { .. } => {
                CliError::Usage(format!("--scores: `{}`: {e}", path.display()))
            }
            e => CliError::Runtime(e),
        }
    })?;
    Ok((timed, measured))
}

/// One valid length per row of a `rows x width` matrix, read from `file`.
fn checked_lengths(file: &Path, rows: usize, width: usize) -> Result<Vec<i32>, CliError> {
    let raw = topk::io::read_lengths(file, None).map_err(|source| CliError::Input {
        flag: "--lengths",
        source,
    })?;
    if raw.len() != rows {
        return Err(CliError::Usage(format!(
            "--lengths: `{}` holds {} lengths but the scores have {rows} rows; give one per row",
            file.display(),
            raw.len()
        )));
    }
    raw.iter()
        .enumerate()
        .map(|(row, &len)| match i32::try_from(len) {
            Ok(l) if (0..=width as i64).contains(&len) => Ok(l),
            _ => Err(CliError::Usage(format!(
                "--lengths: row {row} of `{}` has length {len}, outside [0, {width}]",
                file.display()
            ))),
        })
        .collect()
}

/// Times the selection of a generated `--profile` matrix: generated on the device for the
/// GPU (bit for bit the host's matrix, never crossing the bus), on the host for the CPU.
fn measure_generated(
    a: &BenchArgs,
    name: &str,
    chosen: &Resolved,
    spec: Option<&Spec>,
    reps: Repetitions,
) -> Result<(Timed, Benchmark), CliError> {
    let profile = parse_profile(name)?;
    let (rows, width) = (a.rows.unwrap_or(0), a.width.unwrap_or(0));
    let lengths = generated_lengths(a, rows, width)?;
    let timed = Timed {
        rows,
        width,
        valid_bytes: lengths.iter().map(|&l| l as u64 * 4).sum(),
        source: format!("{profile} (seed {})", a.seed),
    };
    let k = a.k as u32;
    let measured = match chosen.backend {
        Backend::Cuda => {
            let gpu = Gpu::open(0)?;
            let matrix =
                DeviceMatrix::generate(&gpu, profile.code(), a.seed, k, &lengths, width, width)?;
            backend::benchmark_on_device(&gpu, &matrix, spec, a.k, reps)?
        }
        Backend::Cpu => {
            let data = topk_runtime::data::generate(profile, a.seed, k, 0, &lengths, width, width)?;
            let matrix = ScoreMatrix {
                data: &data,
                rows,
                width,
                pitch: width,
                lengths: &lengths,
            };
            backend::benchmark(chosen.backend, spec, a.k, &matrix, reps)?
        }
    };
    Ok((timed, measured))
}

/// Valid lengths of generated rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LengthsKind {
    /// The terminal causal window ending at the width: row r has length width - rows + r + 1
    Causal,
    /// Every row full width
    Full,
}

/// Lengths of the generated rows: --first-length, or the --shape kind.
fn generated_lengths(a: &BenchArgs, rows: usize, width: usize) -> Result<Vec<i32>, CliError> {
    if width > i32::MAX as usize {
        return Err(CliError::Usage(format!(
            "--width {width} is beyond the int32 index range; use at most {}",
            i32::MAX
        )));
    }
    let Some(first) = a.first_length else {
        return Ok(match a.shape {
            LengthsKind::Causal => causal_window(rows, width),
            LengthsKind::Full => vec![width as i32; rows],
        });
    };
    let last = first + rows.saturating_sub(1);
    if rows > 0 && last > width {
        return Err(CliError::Usage(format!(
            "--first-length {first} with {rows} rows makes the last row {last} long, more than \
             --width {width}; use a first length of at most {}",
            (width + 1).saturating_sub(rows)
        )));
    }
    Ok((0..rows).map(|r| (first + r) as i32).collect())
}

fn json(a: &BenchArgs, backend: Backend, t: &Timed, b: &Benchmark) -> serde_json::Value {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let valid_bytes = t.valid_bytes;
    let mut object = serde_json::json!({
        "backend": backend.name(),
        "spec": b.spec.to_string(),
        "input": t.source,
        "rows": t.rows,
        "width": t.width,
        "k": a.k,
        "iters": b.timing.iters,
        "warmup": a.warmup,
        "median_ms": ms(b.timing.median),
        "min_ms": ms(b.timing.min),
        "max_ms": ms(b.timing.max),
        "valid_bytes": valid_bytes,
        "gbps": report::gbps(valid_bytes, b.timing.median),
        "routes": report::routes_json(&b.stats),
        "candidates": b.stats.candidates,
        "max_candidates": b.stats.max_candidates,
        "exact": b.verdict.exact,
        "rows_violating": b.verdict.rows_violating,
    });
    if backend == Backend::Cuda {
        let floor_ms = valid_bytes as f64 / FLOOR_READ_BYTES_PER_S * 1e3;
        object["floor_ms"] = floor_ms.into();
        object["time_over_floor"] = (ms(b.timing.median) / floor_ms).into();
    }
    object
}

fn print_table(k: usize, backend: Backend, input: &Timed, b: &Benchmark) {
    let valid = input.valid_bytes;
    let t = &b.timing;
    let rows: Vec<(&str, String)> = vec![
        ("backend", backend.to_string()),
        ("spec", b.spec.to_string()),
        ("input", input.source.clone()),
        (
            "shape",
            format!(
                "{} rows x {}, k={k}, {} of valid scores",
                input.rows,
                input.width,
                report::size(valid)
            ),
        ),
        (
            "median",
            format!(
                "{} (min {}, max {}, {} iters)",
                report::millis(t.median),
                report::millis(t.min),
                report::millis(t.max),
                t.iters
            ),
        ),
        (
            "throughput",
            format!("{:.2} GB/s of valid scores", report::gbps(valid, t.median)),
        ),
        ("routes", b.stats.to_string()),
        (
            "candidates",
            format!(
                "{} in all, at most {} in one row",
                b.stats.candidates, b.stats.max_candidates
            ),
        ),
        (
            "exact",
            if b.verdict.exact { "yes" } else { "NO" }.to_string(),
        ),
    ];
    for (key, value) in rows {
        report::line(format_args!("{key:<11} {value}"));
    }
    if backend == Backend::Cuda {
        let floor_ms = valid as f64 / FLOOR_READ_BYTES_PER_S * 1e3;
        report::line(format_args!(
            "{:<11} {:.2}x the one-read floor ({floor_ms:.3} ms)",
            "vs floor",
            t.median.as_secs_f64() * 1e3 / floor_ms
        ));
    }
}

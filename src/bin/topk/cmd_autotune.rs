//! `topk autotune`: time every candidate spec per shape bucket on the GPU and store the timings
//! for the planner.

use crate::args::parse_profile;
use crate::{progress, report, CmdResult};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use topk::cli::CliError;
use topk_runtime::autotune::Store;
use topk_runtime::cuda::timing::TimingProtocol;
use topk_runtime::cuda::tune::tune_shape;
use topk_runtime::cuda::Gpu;

const EXAMPLES: &str = "\
Examples:
  topk autotune --k 2048 --rows 512,4096 --width 131072,1048576
  topk autotune --k 2048 --rows 1024 --width 262144 --profile iid --db ./autotune.json";

/// Time every candidate spec for each shape on the GPU and record the timings
///
/// For each (rows, width) a terminal causal window of generated scores is made on the device;
/// each candidate (persistent sampled and exact policies; cluster kernels from 256K and the stage
/// chain from 1M for few long rows; row-local kernels where rows fit; `topk_runtime::autotune::candidates`) is
/// planned, timed as CUDA-graph replays and verified exact. Every timing is stored, keyed by
/// device, compute capability, driver, shape bucket (K; rows and width rounded up to powers of
/// two) and a checksum of the candidate set. The planner then uses the fastest exact candidate
/// for matching shapes; records from another device or candidate set are ignored with a warning.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct AutotuneArgs {
    /// Rank K
    #[arg(long, value_parser = crate::args::parse_k)]
    k: usize,
    /// Row counts, comma-separated
    #[arg(long, value_delimiter = ',', required = true)]
    rows: Vec<u32>,
    /// Row widths, comma-separated
    #[arg(long, value_delimiter = ',', required = true)]
    width: Vec<u32>,
    /// Score profile to tune on
    #[arg(long, default_value = "indexer")]
    profile: String,
    /// Autotune store [default: $TOPK_AUTOTUNE_DB, else autotune.json in the kernel cache dir]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

pub fn run(a: AutotuneArgs) -> CmdResult {
    let profile = parse_profile(&a.profile)?;
    let path = a.db.or_else(Store::default_path).ok_or_else(|| {
        CliError::Usage("no place for the autotune store: pass --db or set TOPK_AUTOTUNE_DB".into())
    })?;
    let mut store = Store::load(&path)?;
    let gpu = Gpu::open(0)?;
    for &rows in &a.rows {
        for &width in &a.width {
            let set = topk_runtime::autotune::candidates(a.k as u32, width);
            let bar = progress::candidates(set.len() as u64, &format!("{rows} x {width}"));
            let record = tune_shape(
                &gpu,
                a.k as u32,
                rows,
                width,
                profile.code(),
                TimingProtocol::default(),
                |done, _, _| bar.set_position(done as u64),
            )?;
            bar.finish_and_clear();
            report::line(format!("{rows} x {width} (K = {}):", a.k));
            for t in &record.timings {
                let time = match (t.median_ms, &t.error) {
                    (Some(ms), _) => format!("{ms:9.4} ms"),
                    (None, Some(e)) => format!("failed: {e}"),
                    (None, None) => "no time".to_string(),
                };
                report::line(format!("  {time}  {}", t.spec));
            }
            match record.best() {
                Some(best) => report::line(format!("  best: {}", best.spec)),
                None => {
                    report::line("  no candidate was exact: nothing will be used from this record")
                }
            }
            store.upsert(record);
            store.save(&path)?;
        }
    }
    report::line(format!("stored in {}", path.display()));
    Ok(ExitCode::SUCCESS)
}

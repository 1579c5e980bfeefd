//! `topk plot`: SVG charts of the merged benchmark results.

use crate::error::CliError;
use crate::plot::{self, Merged};
use crate::{report, CmdResult};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use topk::io::{AtomicFile, IoError};

const EXAMPLES: &str = "\
Examples:
  topk plot --results bench/results --out bench/plots
  cargo run --release -- plot --results bench/results --out bench/plots

Charts written for each input:
  matrix-NAME.json  ->  matrix-NAME-latency.svg  latency against rows per call, a panel per width
                        matrix-NAME-speedup.svg  speedup over the best exact peer per shape
                        matrix-NAME-floor.svg    our time over the one-read floor per shape
  traces-NAME.json  ->  traces-NAME.svg          total latency of each trace per selector";

/// Draw the merged benchmark results as SVG charts
///
/// Reads every matrix-*.json and traces-*.json in the results folder (written by
/// bench/peers/merge_results.py, schema topk-bench-merged/1) and writes one SVG per chart.
/// Only exact times are drawn; a selector without one at a shape is left out there and named
/// in the chart's note. All inputs are read and drawn before anything is written, so a missing
/// or corrupt input leaves no file behind.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct PlotArgs {
    /// Folder holding the merged results
    #[arg(long, value_name = "DIR", default_value = "bench/results")]
    results: PathBuf,
    /// Folder to write the SVG files into (created if missing)
    #[arg(long, value_name = "DIR", default_value = "bench/plots")]
    out: PathBuf,
}

/// Which charts a results file gets, from its name.
#[derive(Clone, Copy)]
enum Kind {
    Matrix,
    Traces,
}

type Chart = fn(&Merged) -> Result<String, String>;

pub fn run(a: PlotArgs) -> CmdResult {
    let mut charts: Vec<(PathBuf, String)> = Vec::new();
    for (path, stem, kind) in inputs(&a.results)? {
        let merged = Merged::load(&path).map_err(CliError::Usage)?;
        let wanted: Vec<(String, Chart)> = match kind {
            Kind::Matrix => {
                if merged.shapes().is_empty() {
                    return Err(CliError::Usage(format!(
                        "`{}` holds no calls outside traces; name trace results traces-*.json",
                        path.display()
                    )));
                }
                vec![
                    (format!("{stem}-latency.svg"), plot::latency as Chart),
                    (format!("{stem}-speedup.svg"), plot::speedup),
                    (format!("{stem}-floor.svg"), plot::floor),
                ]
            }
            Kind::Traces => {
                if merged.traces.is_empty() {
                    return Err(CliError::Usage(format!(
                        "`{}` holds no traces; name results without traces matrix-*.json",
                        path.display()
                    )));
                }
                vec![(format!("{stem}.svg"), plot::traces as Chart)]
            }
        };
        for (name, draw) in wanted {
            let target = a.out.join(name);
            let svg = draw(&merged)
                .map_err(|e| CliError::Usage(format!("cannot draw `{}`: {e}", target.display())))?;
            charts.push((target, svg));
        }
    }
    std::fs::create_dir_all(&a.out).map_err(|source| {
        CliError::Output(IoError::Write {
            path: a.out.clone(),
            source,
        })
    })?;
    for (path, svg) in charts {
        let mut file = AtomicFile::create(&path).map_err(CliError::Output)?;
        file.write_all(svg.as_bytes()).map_err(CliError::Output)?;
        file.commit().map_err(CliError::Output)?;
        report::line(format_args!("wrote {}", path.display()));
    }
    Ok(ExitCode::SUCCESS)
}

/// `(path, file stem, kind)` of every matrix-*.json and traces-*.json in `dir`, by name.
fn inputs(dir: &Path) -> Result<Vec<(PathBuf, String, Kind)>, CliError> {
    if !dir.exists() {
        return Err(CliError::Input {
            flag: "--results",
            source: IoError::NotFound {
                path: dir.to_path_buf(),
            },
        });
    }
    let entries = std::fs::read_dir(dir).map_err(|source| CliError::Input {
        flag: "--results",
        source: IoError::Read {
            path: dir.to_path_buf(),
            source,
        },
    })?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        let kind = if stem.starts_with("matrix-") {
            Kind::Matrix
        } else if stem.starts_with("traces-") {
            Kind::Traces
        } else {
            continue;
        };
        found.push((path, stem.to_string(), kind));
    }
    if found.is_empty() {
        return Err(CliError::Usage(format!(
            "--results: `{}` holds no matrix-*.json or traces-*.json; write them with \
             bench/peers/merge_results.py",
            dir.display()
        )));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

//! `topk-bench plot`: SVG charts of the merged benchmark results and of the GPU bench logs.

use crate::plot::{self, Measurement, Merged, Source};
use crate::{report, CmdResult};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use topk::cli::CliError;
use topk::io::{AtomicFile, IoError};

const EXAMPLES: &str = "\
Examples:
  topk-bench plot --results bench/results --out bench/plots
  cargo run --release -p topk-bench -- plot --results bench/results --out bench/plots

Charts written for each input:
  matrix-NAME.json  ->  matrix-NAME-latency.svg  latency against rows per call, a panel per width
                        matrix-NAME-speedup.svg  speedup over the best exact peer per shape
                        matrix-NAME-floor.svg    our time over the one-read floor per shape
  traces-NAME.json  ->  traces-NAME.svg          total latency of each trace per selector
  few-rows/few-rows-peers-NAME.json
                    ->  few-rows-NAME-latency.svg, few-rows-NAME-speedup.svg (a few long rows)

Charts of the GPU bench logs, each drawn when its input is there:
  ablations.jsonl   ->  ablations-latency.svg    time over the floor per policy (rho, stride,
                                                 rescue, exact proposal), a panel per profile
                        ablations-crossover.svg  latency against N of the cross-* policies, a
                                                 panel per profile and rows per call
  margins.jsonl     ->  margins.svg              time over the floor per shape for each
                                                 (rho, rescue) pair, a panel per profile
  kvsplit.jsonl     ->  kvsplit.svg              time over the floor per shape, default map
                                                 against kvsplit(2|4|8), a panel per profile
  views.jsonl       ->  views.svg                time over the floor per shape, view=run(R)
                                                 against the stride view, a panel per profile
  context-parallel/scaling-*.txt (else x4-*-early.txt)
                    ->  context-parallel.svg     speedup over one GPU against ranks, a line
                                                 per shape, a panel per profile";

/// Draw the merged benchmark results as SVG charts
///
/// Reads every matrix-*.json and traces-*.json in the results folder, and
/// few-rows/few-rows-peers-*.json (written by bench/peers/merge_results.py, schema
/// topk-bench-merged/1), and writes one SVG per chart.
/// The GPU bench logs in the same folder (ablations.jsonl, margins.jsonl, kvsplit.jsonl,
/// views.jsonl and
/// context-parallel/scaling-*.txt, else x4-*-early.txt) get charts of their own when present. Only exact times are
/// drawn; a measurement without one is left out and named in the chart's note. All inputs are
/// read and drawn before anything is written, so a missing or corrupt input leaves no file
/// behind.
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
    /// Calls of a few long rows: latency and speedup (the one-read floor is not what bounds them).
    FewRows,
    Traces,
}

type Chart = fn(&Merged) -> Result<String, String>;

/// A chart of bench log measurements; the text names the file(s) they come from.
type LogChart = fn(&[Measurement], &str) -> Drawn;
/// An SVG document, or why it could not be drawn.
type Drawn = Result<String, String>;

/// A GPU bench log drawn when present: its file in the results folder, how to read it, and
/// the charts it gets.
struct Log {
    file: &'static str,
    source: Source<'static>,
    charts: &'static [(&'static str, LogChart)],
}

const LOGS: [Log; 4] = [
    Log {
        file: "ablations.jsonl",
        source: plot::ABLATIONS,
        charts: &[
            ("ablations-latency.svg", plot::ablation_latency),
            ("ablations-crossover.svg", plot::crossover),
        ],
    },
    Log {
        file: "margins.jsonl",
        source: plot::MARGINS,
        charts: &[("margins.svg", plot::margins)],
    },
    Log {
        file: "kvsplit.jsonl",
        source: plot::KVSPLIT,
        charts: &[("kvsplit.svg", plot::kvsplit)],
    },
    Log {
        file: "views.jsonl",
        source: plot::VIEWS,
        charts: &[("views.svg", plot::views)],
    },
];

/// The context-parallel logs drawn, by (prefix, suffix) of their names, the first kind present
/// winning: those of `bench/run_all_gpu.sh`, else the 4-GPU logs of the earlier revision.
const CONTEXT_PARALLEL_DIR: &str = "context-parallel";
const CONTEXT_PARALLEL_LOGS: [(&str, &str); 2] = [("scaling-", ".txt"), ("x4-", "-early.txt")];

pub fn run(a: PlotArgs) -> CmdResult {
    let mut charts: Vec<(PathBuf, String)> = Vec::new();
    for (path, stem, kind) in inputs(&a.results)? {
        let merged = Merged::load(&path).map_err(CliError::Usage)?;
        let wanted: Vec<(String, Chart)> = match kind {
            Kind::Matrix | Kind::FewRows => {
                if merged.shapes().is_empty() {
                    return Err(CliError::Usage(format!(
                        "`{}` holds no calls outside traces; name trace results traces-*.json \
                         (few-row results few-rows/few-rows-peers-*.json)",
                        path.display()
                    )));
                }
                let mut charts = vec![
                    (format!("{stem}-latency.svg"), plot::latency as Chart),
                    (format!("{stem}-speedup.svg"), plot::speedup),
                ];
                if matches!(kind, Kind::Matrix) {
                    charts.push((format!("{stem}-floor.svg"), plot::floor));
                }
                charts
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
            let svg = draw(&merged).map_err(cannot_draw(&target))?;
            charts.push((target, svg));
        }
    }
    for (name, drawn) in log_charts(&a.results)? {
        let target = a.out.join(name);
        charts.push((target.clone(), drawn.map_err(cannot_draw(&target))?));
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

/// `(path, file stem, kind)` of every matrix-*.json and traces-*.json in `dir` and every
/// few-rows/few-rows-peers-*.json, by name.
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
    // The few-row comparisons, when present: few-rows/few-rows-peers-NAME.json.
    if let Ok(entries) = std::fs::read_dir(dir.join(FEW_ROWS_DIR)) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(profile) = name
                .strip_prefix("few-rows-peers-")
                .and_then(|n| n.strip_suffix(".json"))
            {
                found.push((entry.path(), format!("few-rows-{profile}"), Kind::FewRows));
            }
        }
    }
    if found.is_empty() {
        return Err(CliError::Usage(format!(
            "--results: `{}` holds no matrix-*.json, traces-*.json or \
             few-rows/few-rows-peers-*.json; write them with \
             bench/peers/merge_results.py",
            dir.display()
        )));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// Subfolder of the results holding the few-row comparisons.
const FEW_ROWS_DIR: &str = "few-rows";

fn cannot_draw(target: &Path) -> impl FnOnce(String) -> CliError + '_ {
    move |e| CliError::Usage(format!("cannot draw `{}`: {e}", target.display()))
}

/// `(file name, drawn chart)` for each GPU bench log present in `dir`; an absent log draws
/// nothing, a corrupt one is an error.
fn log_charts(dir: &Path) -> Result<Vec<(&'static str, Drawn)>, CliError> {
    let mut drawn = Vec::new();
    for log in &LOGS {
        let path = dir.join(log.file);
        let Some(runs) = plot::read_optional(&path, &log.source).map_err(CliError::Usage)? else {
            continue;
        };
        let from = path.display().to_string();
        for &(name, draw) in log.charts {
            drawn.push((name, draw(&runs, &from)));
        }
    }
    let logs = context_parallel_logs(dir)?;
    if !logs.is_empty() {
        let mut runs = Vec::new();
        for path in &logs {
            runs.extend(plot::read(path, &plot::CONTEXT_PARALLEL).map_err(CliError::Usage)?);
        }
        let names: Vec<String> = logs
            .iter()
            .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
            .collect();
        let from = format!(
            "{} in {}",
            names.join(", "),
            dir.join(CONTEXT_PARALLEL_DIR).display()
        );
        drawn.push(("context-parallel.svg", plot::context_parallel(&runs, &from)));
    }
    Ok(drawn)
}

/// The context-parallel logs of the 4-GPU machine in `dir`, by name; none without the folder.
fn context_parallel_logs(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let folder = dir.join(CONTEXT_PARALLEL_DIR);
    if !folder.is_dir() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(&folder).map_err(|source| CliError::Input {
        flag: "--results",
        source: IoError::Read {
            path: folder.clone(),
            source,
        },
    })?;
    let names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    let mut found: Vec<PathBuf> = Vec::new();
    for (prefix, suffix) in CONTEXT_PARALLEL_LOGS {
        found = names
            .iter()
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
            })
            .cloned()
            .collect();
        if !found.is_empty() {
            break;
        }
    }
    found.sort();
    Ok(found)
}

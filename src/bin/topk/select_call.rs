//! `topk select` and `topk verify` through the call interface (any dtype, windows, decode rows,
//! values, order, ties, transforms): on the CPU backend or on the GPU, which both implement all
//! of it; `verify` on the CPU.

use crate::call_inputs::{read_boundary, read_values, score_rows, AnyScores, CallFiles};
use crate::{inputs, progress};
use std::path::Path;
use std::time::{Duration, Instant};
use topk::backend::Backend;
use topk::cli::CliError;
use topk::io::{self, Element};
use topk_dsl::Spec;
use topk_runtime::call::{row_windows, CallIo, CallOut};
use topk_runtime::cuda::{CudaSelector, Gpu, PlanRequest};
use topk_runtime::{cpu, RouteStats, Score, ScoreRows};

/// What a call on the CPU selected, and how long it took.
pub struct Selected {
    pub stats: RouteStats,
    pub elapsed: Duration,
    /// Bytes of valid scores (every row's window).
    pub valid_bytes: u64,
}

/// Where a call's outputs go.
#[derive(Clone, Copy)]
pub struct Outputs<'a> {
    /// The int32 [rows, K] indices (.npy).
    pub indices: &'a Path,
    /// The values, with `values=true` (`.safetensors` by extension, else `.npy`; bfloat16
    /// `.npy` as uint16 bit patterns).
    pub values: Option<&'a Path>,
    /// Each row's K-th largest score, float32 [rows] (.npy), with `boundary=true`.
    pub boundary: Option<&'a Path>,
}

/// Select with `spec` on `backend` and write the outputs. The files appear only when the
/// selection succeeded, and all of them or none. The GPU's time includes the copies, not the
/// planning.
pub fn select(
    spec: &Spec,
    scores: AnyScores,
    (rows, width): (usize, usize),
    files: &CallFiles,
    scores_path: &Path,
    outputs: Outputs,
    backend: Backend,
) -> Result<Selected, CliError> {
    let shape = (rows, width);
    let gpu = match backend {
        Backend::Cuda => {
            let gpu = Gpu::open(0).map_err(CliError::Runtime)?;
            let m_cap = u32::try_from(rows.max(1)).unwrap_or(u32::MAX);
            let width_u32 = u32::try_from(width).unwrap_or(u32::MAX);
            let request = PlanRequest::new(spec.k, m_cap, width_u32).with_spec(*spec);
            Some(CudaSelector::new(&gpu, request).map_err(CliError::Runtime)?)
        }
        _ => None,
    };
    let call = (files, outputs);
    match scores {
        AnyScores::F32(data) => on(spec, &data, shape, scores_path, call, gpu),
        AnyScores::F16(data) => on(spec, &data, shape, scores_path, call, gpu),
        AnyScores::Bf16(data) => on(spec, &data, shape, scores_path, call, gpu),
    }
}

/// The selection of scores of any dtype on the GPU selector when given (every dtype's kernels
/// are generated), else on the CPU backend.
fn on<T: Score + Element>(
    spec: &Spec,
    data: &[T],
    shape: (usize, usize),
    scores_path: &Path,
    (files, outputs): (&CallFiles, Outputs),
    gpu: Option<CudaSelector>,
) -> Result<Selected, CliError> {
    match gpu {
        Some(mut selector) => {
            let run = |s: &ScoreRows<T>, io: &CallIo, o: CallOut<T>| {
                selector.select_call(s, io, o, false)
            };
            typed(spec, data, shape, files, scores_path, outputs, run)
        }
        None => typed(spec, data, shape, files, scores_path, outputs, on_cpu(spec)),
    }
}

/// The CPU backend's selection of a call of `spec`.
fn on_cpu<T: Score>(
    spec: &Spec,
) -> impl FnOnce(&ScoreRows<T>, &CallIo, CallOut<T>) -> topk_runtime::Result<RouteStats> + '_ {
    move |scores, io, out| cpu::select_with(spec, scores, io, out, false)
}

fn typed<'a, T: Score + Element>(
    spec: &Spec,
    data: &[T],
    (rows, width): (usize, usize),
    files: &CallFiles,
    scores_path: &Path,
    outputs: Outputs<'a>,
    run: impl FnOnce(&ScoreRows<T>, &CallIo, CallOut<T>) -> topk_runtime::Result<RouteStats>,
) -> Result<Selected, CliError> {
    let k = spec.k as usize;
    let scores = score_rows(data, rows, width);
    let io = files.io(spec);
    let valid = row_windows(spec.io.rows, &io.rows, rows, width)
        .map_err(CliError::Runtime)?
        .iter()
        .map(|w| w.len as u64)
        .sum::<u64>();
    let mut indices = vec![-1i32; rows * k];
    let mut values = spec.io.values.then(|| vec![T::NEG_INFINITY; rows * k]);
    let mut boundary = spec.io.boundary.then(|| vec![f32::NAN; rows]);
    let call = CallOut {
        indices: &mut indices,
        pitch: k,
        values: values.as_deref_mut(),
        boundary: boundary.as_deref_mut(),
    };
    let bar = progress::spinner("selecting");
    let start = Instant::now();
    let selected = run(&scores, &io, call);
    let elapsed = start.elapsed();
    bar.finish_and_clear();
    let stats = selected.map_err(inputs::locate_in(scores_path))?;
    io::npy::write(outputs.indices, &[rows, k], &indices).map_err(CliError::Output)?;
    let mut written = vec![outputs.indices];
    let mut also = |path: &'a Path, result: io::Result<()>| {
        if let Err(e) = result {
            for done in &written {
                let _ = std::fs::remove_file(done);
            }
            return Err(CliError::Output(e));
        }
        written.push(path);
        Ok(())
    };
    if let (Some(path), Some(values)) = (outputs.values, values) {
        also(path, write_values(path, &[rows, k], &values))?;
    }
    if let (Some(path), Some(boundary)) = (outputs.boundary, boundary) {
        also(path, io::npy::write(path, &[rows], &boundary))?;
    }
    Ok(Selected {
        stats,
        elapsed,
        valid_bytes: valid * spec.dtype.size() as u64,
    })
}

/// Write values as `.safetensors` (tensor `values`) when the name says so, else as `.npy`.
fn write_values<T: Element>(path: &Path, shape: &[usize], data: &[T]) -> io::Result<()> {
    let is_safetensors = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("safetensors"));
    if is_safetensors {
        io::safetensors::write(
            path,
            &[io::safetensors::NamedTensor {
                name: "values",
                shape,
                data,
            }],
        )
    } else {
        io::npy::write(path, shape, data)
    }
}

/// What `topk verify` checks besides the scores: the indices, and the values and boundary
/// files when given.
#[derive(Clone, Copy)]
pub struct Checked<'a> {
    pub indices: &'a [i32],
    pub values: Option<&'a Path>,
    pub boundary: Option<&'a Path>,
}

/// Verify the indices (and the values and boundary files, when given) under `spec` on the CPU;
/// the report is the indices' when they break the contract, else the boundary's.
pub fn verify(
    spec: &Spec,
    scores: AnyScores,
    (rows, width): (usize, usize),
    files: &CallFiles,
    checked: Checked,
    scores_path: &Path,
) -> Result<cpu::VerifyReport, CliError> {
    let shape = (rows, width);
    match scores {
        AnyScores::F32(d) => verify_typed(spec, &d, shape, files, checked, scores_path),
        AnyScores::F16(d) => verify_typed(spec, &d, shape, files, checked, scores_path),
        AnyScores::Bf16(d) => verify_typed(spec, &d, shape, files, checked, scores_path),
    }
}

fn verify_typed<T: Score + Element>(
    spec: &Spec,
    data: &[T],
    (rows, width): (usize, usize),
    files: &CallFiles,
    checked: Checked,
    scores_path: &Path,
) -> Result<cpu::VerifyReport, CliError> {
    let k = spec.k as usize;
    let values = match checked.values {
        Some(path) => Some(read_values::<T>(path, spec.dtype, rows, k)?),
        None => None,
    };
    let boundary = match checked.boundary {
        Some(path) => Some(read_boundary(path, rows)?),
        None => None,
    };
    let scores = score_rows(data, rows, width);
    let io = files.io(spec);
    let report = cpu::verify_with(spec, &scores, &io, checked.indices, k, values.as_deref())
        .map_err(inputs::locate_in(scores_path))?;
    match boundary {
        Some(boundary) if report.is_exact() => cpu::verify_boundary(spec, &scores, &io, &boundary)
            .map_err(inputs::locate_in(scores_path)),
        _ => Ok(report),
    }
}

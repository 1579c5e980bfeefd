//! `topk select` and `topk verify` through the call interface (any dtype, windows, decode rows,
//! values, order, ties, transforms): on the CPU backend or on the GPU, which both implement all
//! of it; `verify` on the CPU.

use crate::call_inputs::{read_values, score_rows, AnyScores, CallFiles};
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

/// Select with `spec` on `backend` and write the indices to `out` and, with `values`, the values
/// there (`.safetensors` by extension, else `.npy`; bfloat16 `.npy` as uint16 bit patterns).
/// A file appears only when the selection succeeded, the second only with the first. The GPU's
/// time includes the copies, not the planning.
#[allow(clippy::too_many_arguments)]
pub fn select(
    spec: &Spec,
    scores: AnyScores,
    (rows, width): (usize, usize),
    files: &CallFiles,
    scores_path: &Path,
    out: &Path,
    values: Option<&Path>,
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
    let (scores_path, call) = (scores_path, (files, out, values));
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
    (files, out, values): (&CallFiles, &Path, Option<&Path>),
    gpu: Option<CudaSelector>,
) -> Result<Selected, CliError> {
    match gpu {
        Some(mut selector) => {
            let run = |s: &ScoreRows<T>, io: &CallIo, o: CallOut<T>| {
                selector.select_call(s, io, o, false)
            };
            typed(spec, data, shape, files, scores_path, out, values, run)
        }
        None => typed(
            spec,
            data,
            shape,
            files,
            scores_path,
            out,
            values,
            on_cpu(spec),
        ),
    }
}

/// The CPU backend's selection of a call of `spec`.
fn on_cpu<T: Score>(
    spec: &Spec,
) -> impl FnOnce(&ScoreRows<T>, &CallIo, CallOut<T>) -> topk_runtime::Result<RouteStats> + '_ {
    move |scores, io, out| cpu::select_with(spec, scores, io, out, false)
}

#[allow(clippy::too_many_arguments)]
fn typed<T: Score + Element>(
    spec: &Spec,
    data: &[T],
    (rows, width): (usize, usize),
    files: &CallFiles,
    scores_path: &Path,
    out: &Path,
    values_out: Option<&Path>,
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
    let call = CallOut {
        indices: &mut indices,
        pitch: k,
        values: values.as_deref_mut(),
    };
    let bar = progress::spinner("selecting");
    let start = Instant::now();
    let selected = run(&scores, &io, call);
    let elapsed = start.elapsed();
    bar.finish_and_clear();
    let stats = selected.map_err(inputs::locate_in(scores_path))?;
    io::npy::write(out, &[rows, k], &indices).map_err(CliError::Output)?;
    if let (Some(path), Some(values)) = (values_out, values) {
        if let Err(e) = write_values(path, &[rows, k], &values) {
            let _ = std::fs::remove_file(out);
            return Err(CliError::Output(e));
        }
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

/// Verify `indices` (and the values file, when given) under `spec` on the CPU.
#[allow(clippy::too_many_arguments)]
pub fn verify(
    spec: &Spec,
    scores: AnyScores,
    (rows, width): (usize, usize),
    files: &CallFiles,
    indices: &[i32],
    values: Option<&Path>,
    scores_path: &Path,
) -> Result<cpu::VerifyReport, CliError> {
    let shape = (rows, width);
    match scores {
        AnyScores::F32(d) => verify_typed(spec, &d, shape, files, indices, values, scores_path),
        AnyScores::F16(d) => verify_typed(spec, &d, shape, files, indices, values, scores_path),
        AnyScores::Bf16(d) => verify_typed(spec, &d, shape, files, indices, values, scores_path),
    }
}

#[allow(clippy::too_many_arguments)]
fn verify_typed<T: Score + Element>(
    spec: &Spec,
    data: &[T],
    (rows, width): (usize, usize),
    files: &CallFiles,
    indices: &[i32],
    values_path: Option<&Path>,
    scores_path: &Path,
) -> Result<cpu::VerifyReport, CliError> {
    let k = spec.k as usize;
    let values = match values_path {
        Some(path) => Some(read_values::<T>(path, spec.dtype, rows, k)?),
        None => None,
    };
    let scores = score_rows(data, rows, width);
    cpu::verify_with(
        spec,
        &scores,
        &files.io(spec),
        indices,
        k,
        values.as_deref(),
    )
    .map_err(inputs::locate_in(scores_path))
}

//! Autotune sweeps on the GPU: every candidate timed on one generated matrix, verified.
//!
//! [`time_plan`] is the measurement: one call for the routes and the status word, then the
//! call captured in a CUDA graph and timed as replays ([`super::timing`]), and the timed output
//! checked on the device. [`tune_shape`] runs it for every candidate of a shape and stores the
//! outcome as an [`crate::autotune::Record`] the planner reads.

use super::device::Gpu;
use super::device_matrix::DeviceMatrix;
use super::launch::{status, Workspace};
use super::plan::{Plan, PlanRequest};
use super::timing::{time_graph, GraphTiming, TimingProtocol};
use crate::autotune::{candidates, sweep, DeviceKey, Record, ShapeBucket};
use crate::{Error, Result, RouteStats};
use topk_dsl::Spec;

/// The key autotune records are stored under for this device.
pub fn device_key(gpu: &Gpu) -> DeviceKey {
    let p = gpu.props();
    DeviceKey {
        name: p.name.clone(),
        cc_major: p.cc_major,
        cc_minor: p.cc_minor,
        driver_version: p.driver_version,
    }
}

/// One plan timed and verified on one device matrix.
#[derive(Clone, Debug)]
pub struct Trial {
    /// Replay timing of the captured call.
    pub timing: GraphTiming,
    /// Rows whose timed output breaks the contract, as (row, verifier code); empty when exact.
    pub bad_rows: Vec<(usize, i32)>,
    /// Route statistics of the first (untimed) call. On a phase-probe plan
    /// ([`PlanRequest::phase_probe`]) the candidate counts are phase words, not counts.
    pub routes: RouteStats,
    /// The per-row (route, |Q0|) word pairs the first call wrote, as the kernel wrote them (a
    /// phase-probe plan's carry its row stamps and phase times, [`topk_codegen::probe`]).
    pub row_info: Vec<i32>,
}

impl Trial {
    /// Whether every row of the timed output satisfies the contract.
    pub fn exact(&self) -> bool {
        self.bad_rows.is_empty()
    }
}

fn cuda(what: &str) -> impl FnOnce(cudarc::driver::DriverError) -> Error + use<> {
    Error::driver(what)
}

/// Times `plan` on `matrix` (planned for its rows, width and pitch): one plain call whose
/// status word must be clear and whose route words are kept, then `protocol`'s graph replays
/// into a cleared output, which the device verifier checks.
///
/// # Errors
/// [`Error::Input`] when the device reports invalid input (NaN, a bad length or row count);
/// [`Error::Cuda`] or [`Error::Compile`] when a launch, copy or the verifier fails.
pub fn time_plan(
    gpu: &Gpu,
    plan: &Plan,
    matrix: &DeviceMatrix,
    protocol: TimingProtocol,
) -> Result<Trial> {
    let stream = gpu.stream().clone();
    let k = plan.request.k;
    let out_pitch = plan.request.out_pitch as usize;
    let mut ws = Workspace::new(plan, &stream)?;
    let mut out = stream
        .alloc_zeros::<i32>((matrix.rows.max(1) - 1) * out_pitch + k as usize)
        .map_err(cuda("allocating the output"))?;
    let mut info = stream
        .alloc_zeros::<i32>(2 * matrix.rows.max(1))
        .map_err(cuda("allocating row info"))?;
    matrix.launch(plan, &stream, &mut out, Some(&mut info), &mut ws)?;
    stream.synchronize().map_err(cuda("running the selector"))?;
    let bits = ws.status(&stream)?;
    if bits & (status::NAN | status::BAD_LENGTH | status::BAD_ROWS) != 0 {
        return Err(Error::Input(format!(
            "the device reported invalid input (status {bits:#x})"
        )));
    }
    let row_info = stream.clone_dtoh(&info).map_err(cuda("reading row info"))?;
    let routes = if plan.request.phase_probe {
        RouteStats::from_row_info(&plain_route_words(&row_info), false)
    } else {
        RouteStats::from_row_info(&row_info, false)
    };
    // Clear the output so that the verifier sees only what the timed replays wrote.
    stream
        .memset_zeros(&mut out)
        .map_err(cuda("clearing the output"))?;
    let timing = time_graph(&stream, protocol, || {
        matrix.launch(plan, &stream, &mut out, None, &mut ws)
    })?;
    let bad_rows = matrix.verify(gpu, &out, k, out_pitch)?;
    Ok(Trial {
        timing,
        bad_rows,
        routes,
        row_info,
    })
}

/// A probed launch's route words with the worker and start stamps cleared, as an ordinary
/// build writes them.
fn plain_route_words(info: &[i32]) -> Vec<i32> {
    info.chunks_exact(2)
        .flat_map(|pair| {
            let route = topk_codegen::probe::RowStamp::decode(pair[0]).route;
            [i32::from(route), pair[1]]
        })
        .collect()
}

/// Sweeps the candidate set of (`k`, `rows`, `width`) on a terminal causal window of
/// `profile_code` scores generated on the device; every candidate's timed output is verified
/// on the device, and a candidate that fails to plan, run or verify scores no time.
/// `progress(done, total, spec)` is called before each candidate.
///
/// # Errors
/// Only when the matrix cannot be generated; a failing candidate is recorded, not returned.
pub fn tune_shape(
    gpu: &Gpu,
    k: u32,
    rows: u32,
    width: u32,
    profile_code: i32,
    protocol: TimingProtocol,
    progress: impl FnMut(usize, usize, &Spec),
) -> Result<Record> {
    let lengths = crate::data::shapes::causal_window(rows as usize, width as usize);
    let m = DeviceMatrix::generate(
        gpu,
        profile_code,
        1,
        k,
        &lengths,
        width as usize,
        width as usize,
    )?;
    let set = candidates(k, width);
    Ok(sweep(
        device_key(gpu),
        ShapeBucket::of(k, rows, width),
        (rows, width),
        &set,
        |spec| {
            let request = PlanRequest::new(k, rows, width).with_spec(*spec);
            let trial = time_plan(gpu, &Plan::new(gpu, request)?, &m, protocol)?;
            Ok((trial.timing.median_ms, trial.exact()))
        },
        progress,
    ))
}

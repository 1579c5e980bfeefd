//! Host-memory convenience over a Plan: upload, launch, check the status word, download.
//! (Engines keep their data on the device and use `Plan::launch` directly.)

use super::call::CallShape;
use super::device::Gpu;
use super::launch::{status, LaunchBuffers, Workspace};
use super::plan::{Plan, PlanRequest};
use crate::call::{check_boundary, check_values, resolve, CallIo, CallOut, RowWindow};
use crate::input::{check_indices, check_matrix};
use crate::routes::RouteStats;
use crate::score::{Score, ScoreRows};
use crate::{Error, Result, ScoreMatrix};
use topk_dsl::Dtype;

mod device_call;

use device_call::{copy_rows, status_error, DeviceCall};

/// A planned selector with its workspace, for scores in host memory: each call uploads,
/// launches, checks the status word and downloads (engines with data on the device use
/// [`Plan::launch`] instead).
///
/// ```no_run
/// use topk_runtime::cuda::{CudaSelector, Gpu, PlanRequest};
/// use topk_runtime::ScoreMatrix;
///
/// # fn main() -> topk_runtime::Result<()> {
/// let (rows, width, k) = (8, 100_000, 256);
/// let scores: Vec<f32> = (0..rows * width).map(|i| ((i * 7919) % 10_007) as f32).collect();
/// let lengths = vec![width as i32; rows];
/// let matrix = ScoreMatrix { data: &scores, rows, width, pitch: width, lengths: &lengths };
/// let gpu = Gpu::open(0)?;
/// let mut selector = CudaSelector::new(&gpu, PlanRequest::new(k as u32, rows as u32, width as u32))?;
/// let mut out = vec![0i32; rows * k];
/// let routes = selector.select_host(&matrix, &mut out, k, false)?;
/// assert!(topk_runtime::cpu::verify(&matrix, k, &out, k)?.is_exact());
/// println!("{routes}");
/// # Ok(())
/// # }
/// ```
pub struct CudaSelector {
    gpu: Gpu,
    plan: Plan,
    ws: Workspace,
}

impl CudaSelector {
    /// Plans `request` ([`Plan::new`]) and allocates its workspace.
    ///
    /// # Errors
    /// As [`Plan::new`] and [`Workspace::new`].
    pub fn new(gpu: &Gpu, request: PlanRequest) -> Result<CudaSelector> {
        CudaSelector::with_plan(gpu, Plan::new(gpu, request)?)
    }

    /// A selector over a plan made by the caller (e.g. with an explicit autotune store).
    pub fn with_plan(gpu: &Gpu, plan: Plan) -> Result<CudaSelector> {
        let ws = Workspace::new(&plan, gpu.stream())?;
        Ok(CudaSelector {
            gpu: gpu.clone(),
            plan,
            ws,
        })
    }

    /// The plan it launches.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Selects every row of `scores` into `out` (`rows x out_pitch`), with route statistics
    /// (each row's route and |Q0| too with `per_row_routes`).
    ///
    /// # Errors
    /// [`Error::Input`] when the matrix does not fit the plan or the device reports invalid
    /// input; [`Error::NaN`] naming the first NaN score; [`Error::Cuda`] when a copy or the
    /// launch fails.
    pub fn select_host(
        &mut self,
        scores: &ScoreMatrix,
        out: &mut [i32],
        out_pitch: usize,
        per_row_routes: bool,
    ) -> Result<RouteStats> {
        let r = self.plan.request;
        let k = r.k as usize;
        if self.plan.spec.dtype != Dtype::F32 {
            return Err(Error::Input(format!(
                "the plan's spec has dtype={} but the scores are f32; select 16-bit scores \
                 with `select_call`",
                self.plan.spec.dtype
            )));
        }
        check_host_input(scores, &r, out.len(), out_pitch)?;
        let rows = scores.rows;
        if rows == 0 {
            return Ok(RouteStats::from_row_info(&[], per_row_routes));
        }
        let stream = self.gpu.stream().clone();
        let cuda = |what: &str, e: cudarc::driver::DriverError| Error::driver(what)(e);
        let need = (rows - 1) * scores.pitch + scores.width;
        let d_scores = stream
            .clone_htod(&scores.data[..need])
            .map_err(|e| cuda("uploading scores", e))?;
        let d_lengths = stream
            .clone_htod(scores.lengths)
            .map_err(|e| cuda("uploading lengths", e))?;
        let d_live = stream
            .clone_htod(&[rows as i32])
            .map_err(|e| cuda("uploading the row count", e))?;
        let mut d_out = stream
            .alloc_zeros::<i32>((rows - 1) * r.out_pitch as usize + k)
            .map_err(|e| cuda("allocating the output", e))?;
        let mut d_info = stream
            .alloc_zeros::<i32>(2 * rows)
            .map_err(|e| cuda("allocating row statistics", e))?;
        self.ws.clear_status(&stream)?;
        {
            let scores_v = d_scores.slice(..);
            let lengths_v = d_lengths.slice(..);
            let live_v = d_live.slice(..);
            let mut out_v = d_out.slice_mut(..);
            let mut info_v = d_info.slice_mut(..);
            self.plan.launch(
                &stream,
                LaunchBuffers {
                    scores: &scores_v,
                    lengths: &lengths_v,
                    live_rows: &live_v,
                    out: &mut out_v,
                    row_info: Some(&mut info_v),
                },
                &mut self.ws,
            )?;
        }
        stream
            .synchronize()
            .map_err(|e| cuda("running the selector", e))?;
        let bits = self.ws.status(&stream)?;
        if bits & status::NAN != 0 {
            return Err(locate_nan(scores));
        }
        if bits != 0 {
            return Err(Error::Input(format!(
                "the device reported invalid input (status bits {bits:#x})"
            )));
        }
        let host_out = stream
            .clone_dtoh(&d_out)
            .map_err(|e| cuda("downloading indices", e))?;
        copy_rows(&host_out, r.out_pitch as usize, out, out_pitch, rows, k);
        let info = stream
            .clone_dtoh(&d_info)
            .map_err(|e| cuda("downloading row statistics", e))?;
        Ok(RouteStats::from_row_info(&info, per_row_routes))
    }
}

impl CudaSelector {
    /// Selects every row of a call through the call interface (`docs/interface.md`): the
    /// scores and `io` in host memory, the plan's spec's interface, written into `out` as
    /// [`crate::cpu::select_with`] writes it. The inputs are checked on the host first, with the
    /// CPU backend's errors; a status bit the kernels raise becomes an error naming the row.
    /// Nothing is written to `out` unless the call succeeds.
    /// The scores are of the spec's dtype (`f32`, `half::f16` or `half::bf16`); so are the
    /// values.
    pub fn select_call<T: Score>(
        &mut self,
        scores: &ScoreRows<T>,
        io: &CallIo,
        out: CallOut<T>,
        per_row_routes: bool,
    ) -> Result<RouteStats> {
        let spec = self.plan.spec;
        let r = self.plan.request;
        let k = r.k as usize;
        let (windows, _) = resolve(&spec, scores, io)?;
        let CallOut {
            indices,
            pitch: out_pitch,
            values,
            boundary,
        } = out;
        check_indices(scores.rows, k, indices.len(), out_pitch)?;
        check_values(&spec, values.as_deref(), scores.rows, k, out_pitch)?;
        check_boundary(&spec, boundary.as_deref(), scores.rows)?;
        self.check_extents(scores)?;
        let rows = scores.rows;
        if rows == 0 {
            return Ok(RouteStats::from_row_info(&[], per_row_routes));
        }
        let stream = self.gpu.stream().clone();
        let mut call = DeviceCall::upload(&stream, &self.plan, scores, io)?;
        self.ws.clear_status(&stream)?;
        {
            let (raw, buffers) = call.buffers(&stream, io, &spec.io)?;
            let shape = CallShape {
                rows: rows as u32,
                width: r.width,
                pitch: r.pitch,
                out_pitch: r.out_pitch,
            };
            // SAFETY: every buffer of `call` was allocated for the call's extents (checked
            // against the plan and by `resolve`) on this plan's stream, and lives until the
            // synchronization below.
            unsafe {
                self.plan
                    .launch_call_with(&stream, shape, raw, &buffers, &mut self.ws)?
            };
        }
        stream
            .synchronize()
            .map_err(Error::driver("running the selector"))?;
        let bits = self.ws.status(&stream)?;
        let host_out = stream
            .clone_dtoh(&call.out)
            .map_err(Error::driver("downloading indices"))?;
        if bits != 0 {
            return Err(status_error(
                bits,
                scores,
                &windows,
                &host_out,
                k,
                r.out_pitch as usize,
            ));
        }
        let host_values = match spec.io.values {
            true => Some(
                call.values
                    .download::<T>(&stream)
                    .map_err(Error::driver("downloading values"))?,
            ),
            false => None,
        };
        let host_boundary = match boundary.is_some() {
            true => Some(
                stream
                    .clone_dtoh(&call.boundary)
                    .map_err(Error::driver("downloading boundaries"))?,
            ),
            false => None,
        };
        copy_rows(&host_out, r.out_pitch as usize, indices, out_pitch, rows, k);
        if let (Some(values), Some(host)) = (values, host_values) {
            copy_rows(&host, r.out_pitch as usize, values, out_pitch, rows, k);
        }
        if let (Some(boundary), Some(host)) = (boundary, host_boundary) {
            boundary[..rows].copy_from_slice(&host[..rows]);
        }
        let info = stream
            .clone_dtoh(&call.info)
            .map_err(Error::driver("downloading row statistics"))?;
        Ok(RouteStats::from_row_info(&info, per_row_routes))
    }

    /// Refuses a matrix of more rows than the plan holds, or of another width or pitch.
    fn check_extents<T: Score>(&self, scores: &ScoreRows<T>) -> Result<()> {
        check_shape(scores.rows, scores.width, scores.pitch, &self.plan.request)
    }
}

/// The first NaN among the rows' valid windows, as its row and column in the score matrix.
fn locate_nan_in_windows<T: Score>(scores: &ScoreRows<T>, windows: &[RowWindow]) -> Error {
    for (row, w) in windows.iter().enumerate() {
        let window = &scores.row(row)[w.start..w.start + w.len];
        if let Some(i) = window.iter().position(|x| x.to_f32().is_nan()) {
            return Error::NaN {
                row,
                col: w.start + i,
            };
        }
    }
    Error::Input("the device reported a NaN score".into())
}

/// Refuses a matrix of more rows than the plan holds, or of another width or pitch.
fn check_shape(rows: usize, width: usize, pitch: usize, r: &PlanRequest) -> Result<()> {
    if rows > r.m_cap as usize {
        return Err(Error::Input(format!(
            "{rows} rows but the plan holds at most M_cap = {}",
            r.m_cap
        )));
    }
    if width != r.width as usize || pitch != r.pitch as usize {
        return Err(Error::Input(format!(
            "matrix width/pitch {width}/{pitch} differ from the plan's {}/{}",
            r.width, r.pitch
        )));
    }
    Ok(())
}

fn check_host_input(
    scores: &ScoreMatrix,
    r: &PlanRequest,
    out_len: usize,
    out_pitch: usize,
) -> Result<()> {
    check_shape(scores.rows, scores.width, scores.pitch, r)?;
    check_matrix(scores)?;
    check_indices(scores.rows, r.k as usize, out_len, out_pitch)
}

fn locate_nan(scores: &ScoreMatrix) -> Error {
    for row in 0..scores.rows {
        if let Some(col) = scores.row(row).iter().position(|x| x.is_nan()) {
            return Error::NaN { row, col };
        }
    }
    Error::Input("the device reported a NaN score".into())
}

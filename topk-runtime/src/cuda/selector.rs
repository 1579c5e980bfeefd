//! Host-memory convenience over a Plan: upload, launch, check the status word, download.
//! (Engines keep their data on the device and use `Plan::launch` directly.)

use super::device::Gpu;
use super::launch::{status, LaunchBuffers, Workspace};
use super::plan::{Plan, PlanRequest};
use crate::input::{check_indices, check_matrix};
use crate::routes::RouteStats;
use crate::{Error, Result, ScoreMatrix};

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
        check_host_input(scores, &r, out.len(), out_pitch)?;
        let rows = scores.rows;
        if rows == 0 {
            return Ok(RouteStats::from_row_info(&[], per_row_routes));
        }
        let stream = self.gpu.stream().clone();
        let cuda = |what: &str, e: cudarc::driver::DriverError| Error::Cuda(format!("{what}: {e}"));
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
        for row in 0..rows {
            let src = &host_out[row * r.out_pitch as usize..][..k];
            out[row * out_pitch..][..k].copy_from_slice(src);
        }
        let info = stream
            .clone_dtoh(&d_info)
            .map_err(|e| cuda("downloading row statistics", e))?;
        Ok(RouteStats::from_row_info(&info, per_row_routes))
    }
}

fn check_host_input(
    scores: &ScoreMatrix,
    r: &PlanRequest,
    out_len: usize,
    out_pitch: usize,
) -> Result<()> {
    if scores.rows > r.m_cap as usize {
        return Err(Error::Input(format!(
            "{} rows but the plan holds at most M_cap = {}",
            scores.rows, r.m_cap
        )));
    }
    if scores.width != r.width as usize || scores.pitch != r.pitch as usize {
        return Err(Error::Input(format!(
            "matrix width/pitch {}/{} differ from the plan's {}/{}",
            scores.width, scores.pitch, r.width, r.pitch
        )));
    }
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

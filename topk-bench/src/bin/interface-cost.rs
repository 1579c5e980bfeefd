//! What the call interface costs on the GPU (`docs/interface.md`): for each shape, the planner's
//! spec with the plain interface and the same spec with each interface variant
//! (`topk_bench::interface_cost::Variant`), each captured in a CUDA graph and timed interleaved
//! with the plain call (plain, variant, variant, plain, ... by rounds, so that drift cancels),
//! every timed output verified: the plain call's on the device, each variant's against the CPU
//! verifier with the call's own arrays. A wrong output fails the run (exit status 1).
//!
//! ```text
//! interface-cost [--profile indexer] [--shapes 512x131072,...] [--variants all] [--spec SPEC]
//! ```
//! Prints one line per shape and variant (plain and variant medians, their ratio: the median of
//! the rounds' ratios) and one JSON object per line starting with `{`.

use clap::Parser;
use std::sync::Arc;
use topk_bench::interface_cost::{
    check_output, median, CallArrays, Output, Variant, DEFAULT_SHAPES, PAGE_SIZE,
};
use topk_bench::replay::ReplayTimer;
use topk_dsl::Spec;
use topk_runtime::cuda::cudarc::driver::{
    sys, CudaGraph, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
};
use topk_runtime::cuda::launch::{status, CallBuffers, DeviceRows, DeviceTransform, RawBuffers};
use topk_runtime::cuda::{CallShape, DeviceMatrix, Gpu, Plan, PlanRequest, Workspace};
use topk_runtime::data::shapes::causal_window;
use topk_runtime::data::Profile;
use topk_runtime::{Error, Result, ScoreRows};

/// The cost of each call-interface variant against the plain call, on the GPU.
#[derive(Parser, Debug)]
#[command(name = "interface-cost")]
struct Args {
    /// Score profile generated on the device (indexer, iid, ...).
    #[arg(long, default_value = "indexer")]
    profile: String,
    /// Shapes `MxN,...`, each a terminal causal window.
    #[arg(long, default_value = DEFAULT_SHAPES)]
    shapes: String,
    /// Rank selected (ignored when --spec is given).
    #[arg(long, default_value_t = 2048)]
    k: u32,
    /// Variants to time: `all` or a list of values, window, window-shifted, offset, paged,
    /// paged-rows, sorted, lowest, sorted-lowest, sglang.
    #[arg(long, default_value = "all")]
    variants: String,
    /// The plain spec (default: the planner's choice for each shape).
    #[arg(long)]
    spec: Option<String>,
    /// Timed rounds; each times the plain graph and the variant's, in alternating order.
    #[arg(long, default_value_t = 15)]
    rounds: usize,
    /// Replays per graph and round, timed together.
    #[arg(long, default_value_t = 20)]
    replays: usize,
    /// Untimed replays of each graph first.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
}

fn cuda(what: &str) -> impl Fn(topk_runtime::cuda::cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Cuda(format!("{what}: {e}"))
}

/// Status bits that mean the call's input or arrays were refused.
const INPUT_BITS: u32 = status::NAN | status::BAD_LENGTH | status::BAD_ROWS | status::BAD_TRANSFORM;

/// The device side of one call on a matrix: its arrays, outputs and workspace.
struct DeviceCall {
    variant: Option<Variant>,
    out: CudaSlice<i32>,
    values: Option<CudaSlice<f32>>,
    starts: Option<CudaSlice<i32>>,
    ends: Option<CudaSlice<i32>>,
    offsets: Option<CudaSlice<i32>>,
    table: Option<CudaSlice<i32>>,
    page_rows: Option<CudaSlice<i32>>,
    page_columns: usize,
    ws: Workspace,
}

impl DeviceCall {
    /// Allocates the outputs and workspace of `plan` and uploads `arrays` (`variant` None:
    /// the plain call).
    fn new(
        plan: &Plan,
        stream: &Arc<CudaStream>,
        m: &DeviceMatrix,
        variant: Option<Variant>,
        arrays: &CallArrays,
    ) -> Result<DeviceCall> {
        let k = plan.request.k as usize;
        let len = (m.rows - 1) * plan.request.out_pitch as usize + k;
        let upload = |a: &[i32], what: &str| -> Result<Option<CudaSlice<i32>>> {
            if a.is_empty() {
                return Ok(None);
            }
            stream.clone_htod(a).map(Some).map_err(cuda(what))
        };
        Ok(DeviceCall {
            variant,
            out: stream
                .alloc_zeros::<i32>(len)
                .map_err(cuda("allocating the output"))?,
            values: if plan.spec.io.values {
                Some(
                    stream
                        .alloc_zeros::<f32>(len)
                        .map_err(cuda("allocating values"))?,
                )
            } else {
                None
            },
            starts: upload(&arrays.starts, "uploading starts")?,
            ends: upload(&arrays.ends, "uploading ends")?,
            offsets: upload(&arrays.offsets, "uploading offsets")?,
            table: upload(&arrays.page_table, "uploading the page table")?,
            page_rows: upload(&arrays.page_rows, "uploading the page table's row map")?,
            page_columns: arrays.page_columns,
            ws: Workspace::new(plan, stream)?,
        })
    }

    /// The call's pointers, taken before any capture.
    fn pointers(
        &mut self,
        stream: &Arc<CudaStream>,
        m: &DeviceMatrix,
    ) -> (RawBuffers, CallBuffers) {
        let ptr = |s: &Option<CudaSlice<i32>>| s.as_ref().map_or(0, |s| s.device_ptr(stream).0);
        let raw = RawBuffers {
            scores: m.scores.device_ptr(stream).0,
            lengths: m.lengths.device_ptr(stream).0,
            live_rows: m.live_rows.device_ptr(stream).0,
            out: self.out.device_ptr_mut(stream).0,
            row_info: 0,
        };
        let rows = match &self.starts {
            Some(_) => DeviceRows::Window {
                starts: ptr(&self.starts),
                ends: ptr(&self.ends),
            },
            None => DeviceRows::Lengths,
        };
        let transform = if self.offsets.is_some() {
            DeviceTransform::Offset {
                offsets: ptr(&self.offsets),
            }
        } else if self.page_rows.is_some() {
            DeviceTransform::PagedRows {
                table: ptr(&self.table),
                columns: self.page_columns as u32,
                pitch: self.page_columns as u64,
                page_size: PAGE_SIZE,
                rows: ptr(&self.page_rows),
                table_rows: self
                    .table
                    .as_ref()
                    .map_or(0, |t| t.len() / self.page_columns.max(1))
                    as u32,
            }
        } else if self.table.is_some() {
            DeviceTransform::Paged {
                table: ptr(&self.table),
                columns: self.page_columns as u32,
                pitch: self.page_columns as u64,
                page_size: PAGE_SIZE,
            }
        } else {
            DeviceTransform::None
        };
        let values = self
            .values
            .as_mut()
            .map_or(0, |v| v.device_ptr_mut(stream).0);
        (
            raw,
            CallBuffers {
                rows,
                transform,
                values,
                ..CallBuffers::PLAIN
            },
        )
    }

    /// Enqueues one call of `plan` on `stream`.
    fn launch(&mut self, plan: &Plan, stream: &Arc<CudaStream>, m: &DeviceMatrix) -> Result<()> {
        let (raw, buffers) = self.pointers(stream, m);
        let ws = &mut self.ws;
        // SAFETY: every buffer was allocated for this matrix and plan: scores and lengths cover
        // its rows, the output and values `(rows - 1) * out_pitch + K`, the window and offset
        // arrays one element per row, the page table `rows x page_columns`.
        unsafe { plan.launch_call_with(stream, CallShape::of_plan(plan), raw, &buffers, ws) }
    }

    /// Captures one call into a graph.
    fn capture(
        &mut self,
        plan: &Plan,
        stream: &Arc<CudaStream>,
        m: &DeviceMatrix,
    ) -> Result<CudaGraph> {
        let (raw, buffers) = self.pointers(stream, m);
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(cuda("beginning graph capture"))?;
        // SAFETY: as in `launch`.
        let captured = unsafe {
            plan.launch_call_with(
                stream,
                CallShape::of_plan(plan),
                raw,
                &buffers,
                &mut self.ws,
            )
        };
        let graph = stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .map_err(cuda("ending graph capture"))?;
        captured?;
        graph.ok_or_else(|| Error::Cuda("graph capture recorded nothing".into()))
    }

    /// Fails when the workspace's status word carries an input error; clears it.
    fn check_status(&mut self, stream: &Arc<CudaStream>, what: &str) -> Result<()> {
        let bits = self.ws.status(stream)?;
        self.ws.clear_status(stream)?;
        if bits & INPUT_BITS != 0 {
            let name = self.variant.map_or("plain", Variant::name);
            return Err(Error::Input(format!(
                "{name} {what}: the device reported invalid input (status {bits:#x})"
            )));
        }
        Ok(())
    }
}

/// Per-round mean replay times (ms) of graphs `a` and `b`, interleaved: `a` first in even
/// rounds, `b` first in odd ones.
fn time_interleaved(
    stream: &Arc<CudaStream>,
    a: &CudaGraph,
    b: &CudaGraph,
    args: &Args,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let timer = ReplayTimer::new(stream, args.replays)?;
    let mut times = timer.rotating(&[a, b], args.rounds, args.warmup)?;
    let tb = times.pop().unwrap_or_default();
    let ta = times.pop().unwrap_or_default();
    Ok((ta, tb))
}

/// One shape: the plain call and every variant; returns the failures (wrong outputs).
fn run_shape(
    gpu: &Gpu,
    args: &Args,
    profile: Profile,
    spec: Option<Spec>,
    variants: &[Variant],
    (rows, width): (usize, usize),
) -> Result<Vec<String>> {
    let stream = gpu.stream().clone();
    let k = spec.map_or(args.k, |s| s.k);
    let lengths = causal_window(rows, width);
    let m = DeviceMatrix::generate(gpu, profile.code(), 1, k, &lengths, width, width)?;
    let host_scores = stream
        .clone_dtoh(&m.scores)
        .map_err(cuda("copying scores"))?;
    let scores = ScoreRows {
        data: &host_scores,
        rows,
        width,
        pitch: width,
    };
    let mut request = PlanRequest::new(k, rows as u32, width as u32);
    request.spec = spec;
    let plain = Plan::new(gpu, request)?;
    let mut plain_call = DeviceCall::new(&plain, &stream, &m, None, &CallArrays::default())?;
    plain_call.launch(&plain, &stream, &m)?;
    plain_call.check_status(&stream, "first call")?;
    let plain_graph = plain_call.capture(&plain, &stream, &m)?;
    let mut failures = Vec::new();
    for &variant in variants {
        let spec_v = variant.spec(plain.spec);
        let mut variant_request = request.with_spec(spec_v);
        // Parts the runtime does not run unchecked yet (a row map) are timed too: every output
        // is checked below.
        variant_request.allow_unverified = true;
        let plan = Plan::new(gpu, variant_request)?;
        let arrays = CallArrays::of(variant, &lengths, width);
        let mut call = DeviceCall::new(&plan, &stream, &m, Some(variant), &arrays)?;
        call.launch(&plan, &stream, &m)?;
        call.check_status(&stream, "first call")?;
        // Clear the outputs so that the check sees only what the timed replays wrote.
        stream
            .memset_zeros(&mut call.out)
            .map_err(cuda("clearing the output"))?;
        stream
            .memset_zeros(&mut plain_call.out)
            .map_err(cuda("clearing the output"))?;
        let graph = call.capture(&plan, &stream, &m)?;
        let (t_plain, t_var) = time_interleaved(&stream, &plain_graph, &graph, args)?;
        call.check_status(&stream, "timed replays")?;
        plain_call.check_status(&stream, "timed replays")?;
        let ratios: Vec<f64> = t_var.iter().zip(&t_plain).map(|(v, p)| v / p).collect();
        let (plain_ms, var_ms, ratio) = (median(&t_plain), median(&t_var), median(&ratios));

        let plain_bad = m.verify(gpu, &plain_call.out, k, plain.request.out_pitch as usize)?;
        let indices = stream
            .clone_dtoh(&call.out)
            .map_err(cuda("reading indices"))?;
        let values = match &call.values {
            Some(v) => Some(stream.clone_dtoh(v).map_err(cuda("reading values"))?),
            None => None,
        };
        let out = Output {
            indices: &indices,
            values: values.as_deref(),
            pitch: plan.request.out_pitch as usize,
        };
        let mut verdict = check_output(&spec_v, variant, &scores, &lengths, &arrays, out);
        if !plain_bad.is_empty() {
            let first = &plain_bad[..plain_bad.len().min(5)];
            verdict = Err(format!("the plain call: bad rows {first:?}"));
        }
        let exact = verdict.is_ok();
        println!(
            "{rows:>5} x {width:>8}  {:<14} {plain_ms:>9.4} {var_ms:>9.4} {ratio:>7.4} {:>+7.2}%  {exact:>5}  {spec_v}",
            variant.name(),
            (ratio - 1.0) * 100.0
        );
        println!(
            "{{\"profile\":\"{}\",\"rows\":{rows},\"width\":{width},\"k\":{k},\"variant\":\"{}\",\"plain_ms\":{plain_ms:.5},\"variant_ms\":{var_ms:.5},\"ratio\":{ratio:.5},\"min_ratio\":{:.5},\"max_ratio\":{:.5},\"rounds\":{},\"replays\":{},\"exact\":{exact},\"spec\":\"{spec_v}\"}}",
            profile.name(),
            variant.name(),
            ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratios.iter().copied().fold(0.0, f64::max),
            ratios.len(),
            args.replays.max(1),
        );
        if let Err(why) = verdict {
            failures.push(format!("{rows}x{width} {why}"));
        }
    }
    Ok(failures)
}

fn main() {
    let args = Args::parse();
    let fail = |code: i32, msg: String| -> ! {
        eprintln!("interface-cost: {msg}");
        std::process::exit(code)
    };
    let profile: Profile = args
        .profile
        .parse()
        .unwrap_or_else(|e| fail(2, format!("--profile: {e}")));
    let shapes = topk_bench::shapes::parse_list(&args.shapes)
        .unwrap_or_else(|e| fail(2, format!("--shapes: {e}")));
    let variants =
        Variant::parse_list(&args.variants).unwrap_or_else(|e| fail(2, format!("--variants: {e}")));
    let spec = args.spec.as_deref().map(|t| {
        let s = Spec::parse(t).unwrap_or_else(|e| fail(2, format!("--spec: {e}")));
        if !s.io.is_default() {
            fail(
                2,
                "--spec: give the plain spec; the variants add the interface".into(),
            );
        }
        s
    });
    let gpu = Gpu::open(0).unwrap_or_else(|e| fail(2, format!("no GPU: {e}")));
    println!("device: {} ({} SMs)", gpu.props().name, gpu.props().sms);
    println!(
        "{:>5} x {:>8}  {:<14} {:>9} {:>9} {:>7} {:>8}  {:>5}  spec",
        "M", "N", "variant", "plain ms", "var ms", "ratio", "cost", "exact"
    );
    let mut failures = Vec::new();
    for shape in shapes {
        match run_shape(&gpu, &args, profile, spec, &variants, shape) {
            Ok(f) => failures.extend(f),
            Err(e) => failures.push(format!("{}x{}: {e}", shape.0, shape.1)),
        }
    }
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("FAILED {f}");
        }
        std::process::exit(1);
    }
}

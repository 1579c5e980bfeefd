//! A row's prior on the GPU: the steps of a synthetic decode trace
//! (`topk_runtime::data::DecodeTrace`) selected by three captured calls of the default map's
//! spec for the shape, timed interleaved as CUDA-graph replays: the plain call, the call that
//! also writes each row's boundary (`boundary=true`) and the call that proposes from the
//! previous step's boundary (`prior=P/R,boundary=true`). Every timed output is checked against
//! the CPU verifier (indices, and boundaries against each row's K-th largest), and the prior
//! call's routes against the CPU backend's; a wrong output fails the run (exit status 1).
//!
//! ```text
//! prior-trace [--shapes 1x262144,8x1048576,32x65536] [--drift 0.02,0.2] [--steps 6] [--prior 2/8]
//! ```
//! Prints one line per shape, drift and step after the first, and one JSON object per line
//! starting with `{`. Each step's scores are uploaded before its replays: a few rows fit in L2,
//! so their replays read them from there, as every variant does.

use clap::Parser;
use std::sync::Arc;
use topk_bench::interface_cost::median;
use topk_bench::replay::ReplayTimer;
use topk_dsl::{Io, Prior, Spec};
use topk_runtime::call::{CallIo, IndexTransform, RowSource};
use topk_runtime::cuda::cudarc::driver::{
    sys, CudaGraph, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
};
use topk_runtime::cuda::launch::{CallBuffers, RawBuffers};
use topk_runtime::cuda::{CallShape, Gpu, Plan, PlanRequest, Workspace};
use topk_runtime::data::DecodeTrace;
use topk_runtime::policy::default_spec_for;
use topk_runtime::{cpu, Error, Result, Route, RouteStats, ScoreRows};

/// A row's prior against the plain call on the steps of a decode trace, on the GPU.
#[derive(Parser, Debug)]
#[command(name = "prior-trace")]
struct Args {
    /// Shapes `MxN,...`: M sequences, the longest N scores at the first step.
    #[arg(long, default_value = "1x262144,8x1048576,32x65536")]
    shapes: String,
    /// Query drifts per step, comma-separated.
    #[arg(long, default_value = "0.02,0.2", value_delimiter = ',')]
    drift: Vec<f32>,
    /// Decode steps (the first has no prior).
    #[arg(long, default_value_t = 6)]
    steps: usize,
    /// The prior's margins P/R.
    #[arg(long, default_value = "2/8")]
    prior: Prior,
    /// Rank selected.
    #[arg(long, default_value_t = 2048)]
    k: u32,
    /// Entries of the trace's key and query vectors.
    #[arg(long, default_value_t = 16)]
    dims: usize,
    /// Timed rounds per step; each times the three graphs in a rotating order.
    #[arg(long, default_value_t = 9)]
    rounds: usize,
    /// Replays per graph and round, timed together.
    #[arg(long, default_value_t = 20)]
    replays: usize,
}

fn cuda(what: &str) -> impl Fn(topk_runtime::cuda::cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Cuda(format!("{what}: {e}"))
}

/// One of the three calls: its plan, outputs, workspace and captured graph.
struct Variant {
    name: &'static str,
    plan: Plan,
    out: CudaSlice<i32>,
    info: CudaSlice<i32>,
    boundary: CudaSlice<f32>,
    ws: Workspace,
}

/// The inputs every call reads: scores, lengths, the live row count and the prior.
struct Inputs {
    scores: CudaSlice<f32>,
    lengths: CudaSlice<i32>,
    live: CudaSlice<i32>,
    prior: CudaSlice<f32>,
}

impl Variant {
    fn new(gpu: &Gpu, name: &'static str, spec: Spec, rows: usize, width: usize) -> Result<Self> {
        let stream = gpu.stream();
        let mut request = PlanRequest::new(spec.k, rows as u32, width as u32).with_spec(spec);
        request.allow_unverified = true; // every output below is verified
        let plan = Plan::new(gpu, request)?;
        let k = spec.k as usize;
        Ok(Variant {
            name,
            out: stream
                .alloc_zeros(rows * k)
                .map_err(cuda("allocating the output"))?,
            info: stream
                .alloc_zeros(2 * rows)
                .map_err(cuda("allocating row statistics"))?,
            boundary: stream
                .alloc_zeros(rows)
                .map_err(cuda("allocating boundaries"))?,
            ws: Workspace::new(&plan, stream)?,
            plan,
        })
    }

    /// Captures one call into a graph (its pointers are fixed: each step writes new inputs).
    fn capture(&mut self, stream: &Arc<CudaStream>, inputs: &Inputs) -> Result<CudaGraph> {
        let io = self.plan.spec.io;
        let raw = RawBuffers {
            scores: inputs.scores.device_ptr(stream).0,
            lengths: inputs.lengths.device_ptr(stream).0,
            live_rows: inputs.live.device_ptr(stream).0,
            out: self.out.device_ptr_mut(stream).0,
            row_info: self.info.device_ptr_mut(stream).0,
        };
        let buffers = CallBuffers {
            prior: match io.prior {
                Prior::None => 0,
                Prior::Bins { .. } => inputs.prior.device_ptr(stream).0,
            },
            boundary: if io.boundary {
                self.boundary.device_ptr_mut(stream).0
            } else {
                0
            },
            ..CallBuffers::PLAIN
        };
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(cuda("beginning graph capture"))?;
        let shape = CallShape::of_plan(&self.plan);
        // SAFETY: the inputs and outputs were allocated for the plan's rows and width (scores
        // rows x width, one length, prior and boundary per row, K indices per row).
        let captured = unsafe {
            self.plan
                .launch_call_with(stream, shape, raw, &buffers, &mut self.ws)
        };
        let graph = stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .map_err(cuda("ending graph capture"))?;
        captured?;
        graph.ok_or_else(|| Error::Cuda("graph capture recorded nothing".into()))
    }
}

/// Checks a variant's output of one step on the host; returns its routes.
fn check(
    v: &Variant,
    stream: &Arc<CudaStream>,
    scores: &ScoreRows<f32>,
    lengths: &[i32],
    prior: &[f32],
) -> Result<(RouteStats, Vec<f32>)> {
    let spec = v.plan.spec;
    let k = spec.k as usize;
    let io = CallIo {
        rows: RowSource::Lengths(lengths),
        transform: IndexTransform::None,
        prior: (spec.io.prior != Prior::None).then_some(prior),
    };
    let indices = stream.clone_dtoh(&v.out).map_err(cuda("reading indices"))?;
    let report = cpu::verify_with(&spec, scores, &io, &indices, k, None)?;
    if !report.is_exact() {
        return Err(Error::Input(format!("{}: {report}", v.name)));
    }
    let info = stream
        .clone_dtoh(&v.info)
        .map_err(cuda("reading row statistics"))?;
    let stats = RouteStats::from_row_info(&info, true);
    let boundary = stream
        .clone_dtoh(&v.boundary)
        .map_err(cuda("reading boundaries"))?;
    if spec.io.boundary {
        let report = cpu::verify_boundary(&spec, scores, &io, &boundary)?;
        if !report.is_exact() {
            return Err(Error::Input(format!("{} boundaries: {report}", v.name)));
        }
    }
    if spec.io.prior != Prior::None {
        let mut cpu_out = vec![0i32; scores.rows * k];
        let out = topk_runtime::call::CallOut {
            indices: &mut cpu_out,
            pitch: k,
            values: None,
            boundary: None,
        };
        let spec_no_boundary = Spec {
            io: Io {
                boundary: false,
                ..spec.io
            },
            ..spec
        };
        let want = cpu::select_with(&spec_no_boundary, scores, &io, out, true)?;
        if want.per_row != stats.per_row {
            return Err(Error::Input(format!(
                "{}: routes differ from the CPU's",
                v.name
            )));
        }
    }
    Ok((stats, boundary))
}

fn run(gpu: &Gpu, args: &Args, (rows, start): (usize, usize), drift: f32) -> Result<()> {
    let stream = gpu.stream().clone();
    let k = args.k as usize;
    let start_lens: Vec<usize> = (0..rows)
        .map(|b| (start - b * start / (2 * rows)).max(k + 1))
        .collect();
    let trace = DecodeTrace {
        start_lens,
        dims: args.dims,
        drift,
        seed: 0,
    };
    let width = start + args.steps;
    let facts = gpu.facts();
    let with = |io: Io| default_spec_for(&facts, args.k, rows as u32, width as u32, io);
    let mut variants = vec![
        Variant::new(gpu, "plain", with(Io::DEFAULT), rows, width)?,
        Variant::new(
            gpu,
            "boundary",
            with(Io {
                boundary: true,
                ..Io::DEFAULT
            }),
            rows,
            width,
        )?,
        Variant::new(
            gpu,
            "prior",
            with(Io {
                prior: args.prior,
                boundary: true,
                ..Io::DEFAULT
            }),
            rows,
            width,
        )?,
    ];
    let mut inputs = Inputs {
        scores: stream
            .alloc_zeros(rows * width)
            .map_err(cuda("allocating scores"))?,
        lengths: stream
            .alloc_zeros(rows)
            .map_err(cuda("allocating lengths"))?,
        live: stream
            .clone_htod(&[rows as i32])
            .map_err(cuda("uploading the row count"))?,
        prior: stream
            .clone_htod(&vec![f32::NAN; rows])
            .map_err(cuda("uploading the prior"))?,
    };
    let graphs = variants
        .iter_mut()
        .map(|v| v.capture(&stream, &inputs))
        .collect::<Result<Vec<_>>>()?;
    let mut prior = vec![f32::NAN; rows];
    for t in 0..args.steps {
        let step = trace.step(t, width);
        stream
            .memcpy_htod(&step.scores, &mut inputs.scores)
            .map_err(cuda("uploading scores"))?;
        stream
            .memcpy_htod(&step.lengths, &mut inputs.lengths)
            .map_err(cuda("uploading lengths"))?;
        stream
            .memcpy_htod(&prior, &mut inputs.prior)
            .map_err(cuda("uploading the prior"))?;
        let timer = ReplayTimer::new(&stream, args.replays)?;
        let times = timer.rotating(&graphs.iter().collect::<Vec<_>>(), args.rounds, 1)?;
        for v in &mut variants {
            if v.ws.status(&stream)? != 0 {
                return Err(Error::Input(format!(
                    "{} step {t}: status bits raised",
                    v.name
                )));
            }
        }
        let scores = ScoreRows {
            data: &step.scores,
            rows,
            width,
            pitch: width,
        };
        let mut certified = 0;
        let mut next = prior.clone();
        for v in &variants {
            let (stats, boundary) = check(v, &stream, &scores, &step.lengths, &prior)?;
            if v.name == "prior" {
                certified = stats.count(Route::PriorPrimary) + stats.count(Route::PriorRescue);
                next = boundary;
            }
        }
        prior = next;
        if t == 0 {
            continue; // no prior yet
        }
        let ms: Vec<f64> = times.iter().map(|t| median(t)).collect();
        let spec = variants[2].plan.spec;
        println!(
            "{rows:>3} x {start:>8}  drift {drift:<5} step {t:>2}  plain {:>8.4}  boundary {:>8.4}  prior {:>8.4} ms  prior/plain {:>6.3}  certified {certified}/{rows}  {spec}",
            ms[0], ms[1], ms[2], ms[2] / ms[0]
        );
        println!(
            "{{\"rows\":{rows},\"start\":{start},\"k\":{k},\"drift\":{drift},\"step\":{t},\"plain_ms\":{:.5},\"boundary_ms\":{:.5},\"prior_ms\":{:.5},\"certified\":{certified},\"exact\":true,\"spec\":\"{spec}\"}}",
            ms[0], ms[1], ms[2]
        );
    }
    Ok(())
}

fn main() {
    let args = Args::parse();
    let fail = |code: i32, msg: String| -> ! {
        eprintln!("prior-trace: {msg}");
        std::process::exit(code)
    };
    let shapes = topk_bench::shapes::parse_list(&args.shapes)
        .unwrap_or_else(|e| fail(2, format!("--shapes: {e}")));
    if args.steps < 2 || matches!(args.prior, Prior::None) {
        fail(2, "give --steps >= 2 and a prior P/R".into());
    }
    let gpu = Gpu::open(0).unwrap_or_else(|e| fail(2, format!("no GPU: {e}")));
    println!("device: {} ({} SMs)", gpu.props().name, gpu.props().sms);
    let mut failed = false;
    for &shape in &shapes {
        if shape.1 <= args.k as usize {
            fail(
                2,
                format!("--shapes: rows of {} scores are not longer than K", shape.1),
            );
        }
        for &drift in &args.drift {
            if let Err(e) = run(&gpu, &args, shape, drift) {
                eprintln!("FAILED {}x{} drift {drift}: {e}", shape.0, shape.1);
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}

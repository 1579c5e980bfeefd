//! The call interface on the GPU (`docs/interface.md`) against the CPU reference: every kernel
//! family with row windows (relative and absolute indices, at the row's start, end and middle,
//! unaligned), decode rows, offset and page-table transforms (page sizes 1, 3 and 64, per-row
//! and shared tables), values, sorted output and lowest-index ties, on benign and adversarial
//! rows of lengths 0, 1, K - 1, K, K + 1 and longer. Outputs are compared with
//! `cpu::oracle_with` byte for byte where the spec makes them canonical (sorted, lowest ties),
//! as index sets with lowest ties alone, and checked by `cpu::verify_with` always; routes are
//! the CPU backend's row for row. Scores outside each row's window are NaN, so a kernel that
//! reads beyond its window is caught. Every test needs a GPU and is ignored unless run with
//! `--ignored` (on a GPU host).

mod call_support;
mod gpu_support;

use call_support::{
    bits, check_against_cpu, families, inputs, interfaces, row, sampled, sanitize_maps,
    sanitize_wants, CallInputs, Output, Rng, FAMILIES,
};
use gpu_support::{gpu, warm_kernels};
use topk_dsl::{Io, Mapping, Order, RowLocalVariant, Rows, Spec, Ties, Transform};
use topk_runtime::call::{row_windows, CallIo, CallOut};
use topk_runtime::cuda::launch::status;
use topk_runtime::cuda::{
    CallBuffers, CallShape, CudaSelector, DeviceRows, DeviceTransform, Gpu, Plan, PlanRequest,
    RawBuffers, Workspace,
};
use topk_runtime::{Error, Route, RouteStats, ScoreRows};

const WIDTH: usize = 3000;
/// Rows of a matrix, the row pitch a little wider than the rows (NaN between).
const PITCH: usize = WIDTH + 3;

/// Row lengths for rank k: empty, one score, around K, long, full width (three decode groups).
fn lens(k: usize) -> [usize; 9] {
    [0, 1, k - 1, k, k + 1, 700, 1500, WIDTH - 1, WIDTH]
}

/// `data` (rows of `WIDTH` at `PITCH`) with NaN everywhere outside each row's window under
/// `spec` and `io`, so that a read outside a window shows.
fn masked(data: &[f32], rows: usize, spec: &Spec, io: &CallIo) -> Vec<f32> {
    let windows = row_windows(spec.io.rows, &io.rows, rows, WIDTH).unwrap();
    let mut out = vec![f32::NAN; data.len()];
    for (r, w) in windows.iter().enumerate() {
        let at = r * PITCH + w.start;
        out[at..at + w.len].copy_from_slice(&data[at..at + w.len]);
    }
    out
}

fn scores(data: &[f32], rows: usize) -> ScoreRows<'_, f32> {
    ScoreRows {
        data,
        rows,
        width: WIDTH,
        pitch: PITCH,
    }
}

/// The call run on the GPU by `sel`, with route statistics per row.
fn run_gpu(
    sel: &mut CudaSelector,
    spec: &Spec,
    scores: &ScoreRows<f32>,
    io: &CallIo,
    label: &str,
) -> (Output<f32>, RouteStats) {
    let k = spec.k as usize;
    let mut indices = vec![i32::MIN; scores.rows * k];
    let mut values = spec.io.values.then(|| vec![f32::NAN; scores.rows * k]);
    let out = CallOut {
        indices: &mut indices,
        pitch: k,
        values: values.as_deref_mut(),
        boundary: None,
    };
    let stats = sel
        .select_call(scores, io, out, true)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    (Output { indices, values }, stats)
}

fn run_cpu(spec: &Spec, scores: &ScoreRows<f32>, io: &CallIo, oracle: bool) -> Output<f32> {
    call_support::run(spec, scores, io, oracle)
}

/// Each interface of `ios` on `family` at its rank over every row family, the call's arrays
/// made for page sizes 1, 3 and 64 and per-row or shared page tables in turn. Returns the
/// routes seen.
fn check_family(gpu: &Gpu, family: Spec, ios: &[Io], seed: u64) -> Vec<Route> {
    let k = family.k as usize;
    let lens = lens(k);
    let rows = lens.len();
    let mut rng = Rng::new(seed);
    let mut seen = Vec::new();
    for &io in ios {
        let spec = Spec { io, ..family };
        let mut request = PlanRequest::new(spec.k, rows as u32, WIDTH as u32).with_spec(spec);
        request.pitch = PITCH as u64;
        request.allow_unverified = true; // transform=paged(rows); every output is checked
        let mut sel =
            CudaSelector::new(gpu, request).unwrap_or_else(|e| panic!("{spec}: plan: {e}"));
        for (f, rows_family) in FAMILIES.into_iter().enumerate() {
            let mut data = vec![f32::NAN; rows * PITCH];
            for r in 0..rows {
                let values = row::<f32>(rows_family, &mut rng, WIDTH, k);
                data[r * PITCH..][..WIDTH].copy_from_slice(&values);
            }
            let page_size = [1, 3, 64][f % 3];
            let arrays: CallInputs = inputs(&mut rng, &lens, WIDTH, page_size, f % 2 == 1);
            let call = arrays.io(&spec);
            let data = masked(&data, rows, &spec, &call);
            let scores = scores(&data, rows);
            let label = format!("{spec} / {rows_family:?} / page size {page_size}");
            let (got, stats) = run_gpu(&mut sel, &spec, &scores, &call, &label);
            check_against_cpu(&spec, &scores, &call, &got, &stats, &label);
            seen.extend(stats.per_row.unwrap_or_default());
        }
    }
    seen
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn every_family_writes_every_interface_as_the_cpu_does() {
    let gpu = gpu();
    let mut routes = std::collections::BTreeSet::new();
    let all = interfaces();
    warm_kernels(gpu.arch(), &call_test_specs());
    for (n, family) in families(64).into_iter().enumerate() {
        routes.extend(check_family(&gpu, family, &all, 100 + n as u64));
    }
    // A rank that is not a power of two (the sort pads its pairs), sorted, on a family of each
    // kind.
    let sorted: Vec<Io> = all
        .into_iter()
        .filter(|io| io.order == Order::Sorted)
        .collect();
    for family in families(300) {
        if matches!(
            family.mapping,
            Mapping::Persistent | Mapping::Cluster { ctas: 16 } | Mapping::Staged
        ) {
            routes.extend(check_family(&gpu, family, &sorted, 7));
        }
    }
    for route in [Route::Short, Route::Primary, Route::DirectExact] {
        assert!(routes.contains(&route), "{routes:?}");
    }
}

/// Rows too long for the on-chip frontier (all equal, or ties at rank K over most of the row)
/// refine by re-reading the row: lowest ties continue over positions there too.
#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn lowest_ties_and_sorting_hold_when_the_frontier_is_reread() {
    let gpu = gpu();
    let (rows, width, k) = (6usize, 90_000usize, 2048usize);
    let mut rng = Rng::new(11);
    let lens = [width, width - 1, 70_001, k + 1, width, 50_000];
    for family in [
        call_support::Family::AllEqual,
        call_support::Family::FewLevels,
        call_support::Family::TiesAtRankK,
    ] {
        let data: Vec<f32> = (0..rows)
            .flat_map(|_| row::<f32>(family, &mut rng, width, k))
            .collect();
        let scores = ScoreRows {
            data: &data,
            rows,
            width,
            pitch: width,
        };
        for base in families(k as u32) {
            if base.mapping == Mapping::RowLocal(RowLocalVariant::Register) {
                continue; // rows of at most 16K scores
            }
            let spec = Spec {
                io: call_support::REREAD,
                ..base
            };
            let arrays = inputs(&mut rng, &lens, width, 1, false);
            let call = arrays.io(&spec);
            let request = PlanRequest::new(spec.k, rows as u32, width as u32).with_spec(spec);
            let mut sel = CudaSelector::new(&gpu, request).unwrap();
            let label = format!("{spec} / {family:?} / {width} wide");
            let (got, stats) = run_gpu(&mut sel, &spec, &scores, &call, &label);
            check_against_cpu(&spec, &scores, &call, &got, &stats, &label);
        }
    }
}

/// A NaN inside a window is reported with its column in the matrix (short rows included, whose
/// scores the values and the sort read); one outside every window is never read.
#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn nan_inside_a_window_is_reported_and_outside_never_read() {
    let gpu = gpu();
    let k = 64usize;
    let lens = lens(k);
    let rows = lens.len();
    let mut rng = Rng::new(12);
    let mut data: Vec<f32> = (0..rows * PITCH).map(|_| rng.unit()).collect();
    // Values, relative windows and offsets: a spec the test above compiles.
    let io = interfaces()[4];
    assert!(io.values && io.rows == Rows::Window { relative: true });
    for base in families(k as u32) {
        let spec = Spec { io, ..base };
        let arrays = inputs(&mut rng, &lens, WIDTH, 1, false);
        let call = arrays.io(&spec);
        let mut request = PlanRequest::new(spec.k, rows as u32, WIDTH as u32).with_spec(spec);
        request.pitch = PITCH as u64;
        request.allow_unverified = true; // transform=paged(rows); every output is checked
        let mut sel = CudaSelector::new(&gpu, request).unwrap();
        // Row 2 (K - 1 scores, a short row) and row 6 (1500 scores in the middle of the row).
        for row in [2usize, 6] {
            let start = arrays.starts[row] as usize;
            let (col, outside) = (start + lens[row] / 2, start + lens[row]);
            let (keep, keep_out) = (data[row * PITCH + col], data[row * PITCH + outside]);
            data[row * PITCH + outside] = f32::NAN;
            let mut out = vec![0; rows * k];
            let mut values = vec![0f32; rows * k];
            let scores_ok = scores(&data, rows);
            let ok = CallOut {
                indices: &mut out,
                pitch: k,
                values: Some(&mut values),
                boundary: None,
            };
            sel.select_call(&scores_ok, &call, ok, false)
                .unwrap_or_else(|e| panic!("{spec}: a NaN outside row {row}'s window: {e}"));
            data[row * PITCH + col] = f32::NAN;
            let scores_nan = scores(&data, rows);
            let out_nan = CallOut {
                indices: &mut out,
                pitch: k,
                values: Some(&mut values),
                boundary: None,
            };
            match sel.select_call(&scores_nan, &call, out_nan, false) {
                Err(Error::NaN { row: r, col: c }) => assert_eq!((r, c), (row, col), "{spec}"),
                other => panic!("{spec}: expected a NaN error, got {other:?}"),
            }
            data[row * PITCH + col] = keep;
            data[row * PITCH + outside] = keep_out;
        }
    }
}

/// Device buffers of a call, owned.
struct DeviceCall {
    scores: cudarc::driver::CudaSlice<f32>,
    starts: cudarc::driver::CudaSlice<i32>,
    ends: cudarc::driver::CudaSlice<i32>,
    offsets: cudarc::driver::CudaSlice<i32>,
    live: cudarc::driver::CudaSlice<i32>,
    out: cudarc::driver::CudaSlice<i32>,
    values: cudarc::driver::CudaSlice<f32>,
}

impl DeviceCall {
    fn new(gpu: &Gpu, data: &[f32], arrays: &CallInputs, live: i32, out_len: usize) -> DeviceCall {
        let s = gpu.stream();
        DeviceCall {
            scores: s.clone_htod(data).unwrap(),
            starts: s.clone_htod(&arrays.starts).unwrap(),
            ends: s.clone_htod(&arrays.ends).unwrap(),
            offsets: s.clone_htod(&arrays.offsets).unwrap(),
            live: s.clone_htod(&[live]).unwrap(),
            out: s.clone_htod(&vec![-7; out_len]).unwrap(),
            values: s.clone_htod(&vec![7.0f32; out_len]).unwrap(),
        }
    }

    /// The raw pointers of a `rows=window(relative),transform=offset,values=true` call.
    fn pointers(&mut self, gpu: &Gpu) -> (RawBuffers, CallBuffers) {
        use cudarc::driver::{DevicePtr, DevicePtrMut};
        let s = gpu.stream();
        let raw = RawBuffers {
            scores: self.scores.device_ptr(s).0,
            lengths: 0,
            live_rows: self.live.device_ptr(s).0,
            out: self.out.device_ptr_mut(s).0,
            row_info: 0,
        };
        let call = CallBuffers {
            rows: DeviceRows::Window {
                starts: self.starts.device_ptr(s).0,
                ends: self.ends.device_ptr(s).0,
            },
            transform: DeviceTransform::Offset {
                offsets: self.offsets.device_ptr(s).0,
            },
            values: self.values.device_ptr_mut(s).0,
            ..CallBuffers::PLAIN
        };
        (raw, call)
    }
}

/// One captured graph serves calls with new windows, offsets and row counts written on the
/// device between replays; rows past the live count stay untouched (persistent, KV-split and
/// the stage chain, whose workspace the chain clears inside the graph).
#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn graph_replays_follow_new_windows_and_offsets() {
    use topk_runtime::cuda::cudarc::driver::sys;
    let gpu = gpu();
    let (k, m_cap, width) = (512usize, 24usize, 40_000usize);
    let mut rng = Rng::new(13);
    let data: Vec<f32> = (0..m_cap * width).map(|_| rng.gaussian()).collect();
    let matrix = ScoreRows {
        data: &data,
        rows: m_cap,
        width,
        pitch: width,
    };
    for mapping in [
        Mapping::Persistent,
        Mapping::KvSplit { splits: 2 },
        Mapping::Staged,
    ] {
        let spec = Spec {
            k: k as u32,
            mapping,
            proposal: sampled(32, 150, 175),
            io: Io {
                values: true,
                order: Order::Sorted,
                ties: Ties::Lowest,
                rows: Rows::Window { relative: true },
                transform: Transform::Offset,
                ..Io::DEFAULT
            },
            ..Spec::default()
        };
        let plan = Plan::new(
            &gpu,
            PlanRequest::new(k as u32, m_cap as u32, width as u32).with_spec(spec),
        )
        .unwrap();
        let stream = gpu.stream().clone();
        let mut ws = Workspace::new(&plan, &stream).unwrap();
        let lens_a: Vec<usize> = (0..m_cap)
            .map(|r| [0, 1, k, k + 1, 9_000, width][r % 6])
            .collect();
        let lens_b: Vec<usize> = (0..m_cap).map(|r| (r * 1_663 + 7) % (width + 1)).collect();
        let first = inputs(&mut rng, &lens_a, width, 1, false);
        let mut dev = DeviceCall::new(&gpu, &data, &first, m_cap as i32, m_cap * k);
        let (raw, buffers) = dev.pointers(&gpu);
        let shape = CallShape {
            rows: m_cap as u32,
            width: width as u32,
            pitch: width as u64,
            out_pitch: k as u64,
        };
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        unsafe { plan.launch_call_with(&stream, shape, raw, &buffers, &mut ws) }.unwrap();
        let graph = stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .unwrap()
            .expect("a graph");
        for (live, lens) in [(m_cap, &lens_a), (17, &lens_b), (5, &lens_a)] {
            let arrays = inputs(&mut rng, lens, width, 1, false);
            stream.memcpy_htod(&arrays.starts, &mut dev.starts).unwrap();
            stream.memcpy_htod(&arrays.ends, &mut dev.ends).unwrap();
            stream
                .memcpy_htod(&arrays.offsets, &mut dev.offsets)
                .unwrap();
            stream.memcpy_htod(&[live as i32], &mut dev.live).unwrap();
            stream
                .memcpy_htod(&vec![-7; m_cap * k], &mut dev.out)
                .unwrap();
            for _ in 0..2 {
                graph.launch().unwrap();
            }
            let out = stream.clone_dtoh(&dev.out).unwrap();
            let values = stream.clone_dtoh(&dev.values).unwrap();
            let live_io = CallInputs {
                starts: arrays.starts[..live].to_vec(),
                ends: arrays.ends[..live].to_vec(),
                offsets: arrays.offsets[..live].to_vec(),
                ..arrays
            };
            let call = live_io.io(&spec);
            let live_scores = ScoreRows {
                rows: live,
                ..matrix
            };
            let want = run_cpu(&spec, &live_scores, &call, true);
            let label = format!("{spec}: {live} live rows");
            assert_eq!(out[..live * k], want.indices[..], "{label}");
            assert_eq!(
                values[..live * k]
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
                bits(&want.values).unwrap(),
                "{label}"
            );
            assert!(
                out[live * k..].iter().all(|&v| v == -7),
                "{label}: rows >= m were written"
            );
        }
        assert_eq!(ws.status(&stream).unwrap(), 0, "{spec}");
    }
}

/// The device buffers of `arrays` for a call of `spec`, with `values` as the values output.
struct Uploaded {
    arrays: Vec<cudarc::driver::CudaSlice<i32>>,
}

impl Uploaded {
    fn new(gpu: &Gpu, arrays: &CallInputs) -> Uploaded {
        let s = gpu.stream();
        let up = |v: &[i32]| {
            s.clone_htod(if v.is_empty() { &[0][..] } else { v })
                .unwrap()
        };
        Uploaded {
            arrays: vec![
                up(&arrays.starts),
                up(&arrays.ends),
                up(&arrays.seq_lens),
                up(&arrays.offsets),
                up(&arrays.table),
                up(&arrays.page_rows),
            ],
        }
    }

    fn buffers(&self, gpu: &Gpu, spec: &Spec, arrays: &CallInputs, values: u64) -> CallBuffers {
        use cudarc::driver::DevicePtr;
        let ptr = |i: usize| self.arrays[i].device_ptr(gpu.stream()).0;
        CallBuffers {
            rows: match spec.io.rows {
                Rows::Lengths => DeviceRows::Lengths,
                Rows::Window { .. } => DeviceRows::Window {
                    starts: ptr(0),
                    ends: ptr(1),
                },
                Rows::Decode => DeviceRows::Decode {
                    seq_lens: ptr(2),
                    next_n: arrays.next_n,
                },
            },
            transform: match spec.io.transform {
                Transform::None => DeviceTransform::None,
                Transform::Offset => DeviceTransform::Offset { offsets: ptr(3) },
                Transform::Paged => DeviceTransform::Paged {
                    table: ptr(4),
                    columns: arrays.table_columns as u32,
                    pitch: arrays.table_pitch as u64,
                    page_size: arrays.page_size,
                },
                Transform::PagedRows => DeviceTransform::PagedRows {
                    table: ptr(4),
                    columns: arrays.table_columns as u32,
                    pitch: arrays.table_columns as u64,
                    page_size: arrays.page_size,
                    rows: ptr(5),
                    table_rows: (arrays.table.len() / arrays.table_columns.max(1)) as u32,
                },
            },
            values: if spec.io.values { values } else { 0 },
            ..CallBuffers::PLAIN
        }
    }
}

/// The status bits of one call of `spec` on `arrays` (which the host API would reject), launched
/// on the device as they are.
fn device_status(gpu: &Gpu, spec: Spec, data: &[f32], arrays: &CallInputs) -> u32 {
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    let (k, rows) = (spec.k as usize, arrays.lengths.len());
    let stream = gpu.stream().clone();
    let plan = Plan::new(
        gpu,
        PlanRequest::new(spec.k, rows as u32, WIDTH as u32).with_spec(spec),
    )
    .unwrap();
    let mut ws = Workspace::new(&plan, &stream).unwrap();
    let d_scores = stream.clone_htod(data).unwrap();
    let d_lengths = stream.clone_htod(&arrays.lengths).unwrap();
    let d_live = stream.clone_htod(&[rows as i32]).unwrap();
    let mut d_out = stream.alloc_zeros::<i32>(rows * k).unwrap();
    let mut d_values = stream.alloc_zeros::<f32>(rows * k).unwrap();
    let uploaded = Uploaded::new(gpu, arrays);
    let values = d_values.device_ptr_mut(&stream).0;
    let call = uploaded.buffers(gpu, &spec, arrays, values);
    let raw = RawBuffers {
        scores: d_scores.device_ptr(&stream).0,
        lengths: d_lengths.device_ptr(&stream).0,
        live_rows: d_live.device_ptr(&stream).0,
        out: d_out.device_ptr_mut(&stream).0,
        row_info: 0,
    };
    let shape = CallShape::of_plan(&plan);
    unsafe { plan.launch_call_with(&stream, shape, raw, &call, &mut ws) }.unwrap();
    ws.status(&stream).unwrap()
}

/// Windows and transforms the host would reject, written on the device, raise the status bits
/// (BAD_LENGTH for a window outside the row, BAD_TRANSFORM for an offset range or a page table
/// that cannot write a row's indices, and for a used page entry that is negative); the host
/// API names the row of a bad page entry. Specs the first test compiles.
#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn bad_windows_and_transforms_raise_status_bits() {
    let gpu = gpu();
    let k = 64usize;
    // Six full rows: two decode groups of next_n = 3.
    let lens = [WIDTH; 6];
    let rows = lens.len();
    let mut rng = Rng::new(14);
    let data: Vec<f32> = (0..rows * WIDTH).map(|_| rng.unit()).collect();
    let (windows, decode_paged) = (interfaces()[4], interfaces()[6]);
    assert_eq!(windows.transform, Transform::Offset);
    assert_eq!(decode_paged.rows, Rows::Decode);
    for base in families(k as u32) {
        let fresh = |rng: &mut Rng| {
            let mut arrays = inputs(rng, &lens, WIDTH, 3, false);
            arrays.offsets.fill(0);
            arrays
        };
        // Row 1's window ends past the row; row 3's ends before it starts.
        let spec = Spec {
            io: windows,
            ..base
        };
        let mut arrays = fresh(&mut rng);
        let w = WIDTH as i32;
        arrays.starts = vec![0, 10, 5, 30, 0, 0];
        arrays.ends = vec![w, w + 1, 900, 29, w, w];
        let bits = device_status(&gpu, spec, &data, &arrays);
        assert_eq!(bits, status::BAD_LENGTH, "{spec}: windows");
        // Row 2's offset makes its last index overflow int32.
        let mut arrays = fresh(&mut rng);
        arrays.offsets = vec![0, 5, i32::MAX - 100, 0, 0, 0];
        let bits = device_status(&gpu, spec, &data, &arrays);
        assert_eq!(bits, status::BAD_TRANSFORM, "{spec}: offsets");
        // Too few pages for the rows, then a negative entry in every page.
        let spec = Spec {
            io: decode_paged,
            ..base
        };
        let mut arrays = fresh(&mut rng);
        arrays.table_columns -= 1;
        arrays.table_pitch = arrays.table_columns;
        let bits = device_status(&gpu, spec, &data, &arrays);
        assert_eq!(
            bits,
            status::BAD_TRANSFORM,
            "{spec}: a page table too narrow"
        );
        let mut arrays = fresh(&mut rng);
        arrays.table.fill(-1);
        let bits = device_status(&gpu, spec, &data, &arrays);
        assert_eq!(bits, status::BAD_TRANSFORM, "{spec}: negative pages");
    }
    // The host API: the ranges are checked before launching, a bad used entry after.
    let spec = Spec {
        io: decode_paged,
        ..families(k as u32)[0]
    };
    let mut arrays = inputs(&mut rng, &lens, WIDTH, 3, true);
    arrays.table.fill(-5);
    let call = arrays.io(&spec);
    let scores = ScoreRows {
        data: &data,
        rows,
        width: WIDTH,
        pitch: WIDTH,
    };
    let mut sel = CudaSelector::new(
        &gpu,
        PlanRequest::new(k as u32, rows as u32, WIDTH as u32).with_spec(spec),
    )
    .unwrap();
    let mut out = vec![0; rows * k];
    let mut values = vec![0f32; rows * k];
    let out = CallOut {
        indices: &mut out,
        pitch: k,
        values: Some(&mut values),
        boundary: None,
    };
    let err = sel
        .select_call(&scores, &call, out, false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("row 0") && err.contains("page-table entry"),
        "{err}"
    );
}

/// A short workload for `bench/sanitize.sh` (compute-sanitizer's memcheck, racecheck and
/// synccheck): on each family `TOPK_SANITIZE_MAPS` names (comma-separated `persistent`,
/// `rowlocal`, `kvsplit`, `cluster`, `staged`; all when unset), three interfaces that together
/// use every part of the call interface, on a few short rows of two row families, each output
/// checked against the CPU as above, at K = 64 (one warp sorts); then the re-reading interface
/// (sorted values) at K = 2048, where the sort's stages span warps and block barriers. With
/// `TOPK_SANITIZE_QUICK` set, the first two interfaces (which use every part between them) and
/// the K = 2048 sort on one row family, for the slower tools.
#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host (bench/sanitize.sh runs it)"]
fn sanitizer_workload() {
    let gpu = gpu();
    let maps = sanitize_maps();
    let wanted = |spec: &Spec| sanitize_wants(&maps, spec);
    let rows = 9usize;
    let mut rng = Rng::new(15);
    // Specs the first test compiles: sorted lowest ties through a page table on absolute
    // windows; values with offsets on relative windows; values through a page table on decode
    // rows; sorted values through a page table's rows by a row map.
    let all = interfaces();
    let interfaces = [all[5], all[4], all[6], all[all.len() - 1]];
    let quick = std::env::var_os("TOPK_SANITIZE_QUICK").is_some();
    let row_families = [
        call_support::Family::TiesAtRankK,
        call_support::Family::Specials,
    ];
    let (interfaces, row_families) = match quick {
        true => (&interfaces[..2], &row_families[..1]),
        false => (&interfaces[..], &row_families[..]),
    };
    let small = families(64)
        .into_iter()
        .flat_map(|family| interfaces.iter().map(move |&io| Spec { io, ..family }));
    // The same specs `call_test_specs` compiles at K = 2048 (so the cache has them).
    let sorted_long = families(2048)
        .into_iter()
        .filter(|f| f.mapping != Mapping::RowLocal(RowLocalVariant::Register))
        .map(|family| Spec {
            io: call_support::REREAD,
            ..family
        });
    let mut ran = 0;
    for spec in small.chain(sorted_long).filter(wanted) {
        let k = spec.k as usize;
        let lens = lens(k);
        let mut request = PlanRequest::new(spec.k, rows as u32, WIDTH as u32).with_spec(spec);
        request.pitch = PITCH as u64;
        request.allow_unverified = true; // transform=paged(rows); every output is checked
        let mut sel = CudaSelector::new(&gpu, request).unwrap();
        for &rows_family in row_families {
            let mut data = vec![f32::NAN; rows * PITCH];
            for r in 0..rows {
                let values = row::<f32>(rows_family, &mut rng, WIDTH, k);
                data[r * PITCH..][..WIDTH].copy_from_slice(&values);
            }
            let arrays = inputs(&mut rng, &lens, WIDTH, 3, false);
            let call = arrays.io(&spec);
            let data = masked(&data, rows, &spec, &call);
            let scores = scores(&data, rows);
            let label = format!("{spec} / {rows_family:?}");
            let (got, stats) = run_gpu(&mut sel, &spec, &scores, &call, &label);
            check_against_cpu(&spec, &scores, &call, &got, &stats, &label);
            ran += 1;
        }
    }
    assert!(ran > 0, "TOPK_SANITIZE_MAPS={maps} names no family");
}

/// The specs of the tests above: every family with every interface at K = 64, the sorted ones
/// at K = 300 on a family of each kind, the re-reading frontier's at K = 2048.
fn call_test_specs() -> Vec<Spec> {
    let all = interfaces();
    let mut specs: Vec<Spec> = families(64)
        .into_iter()
        .flat_map(|family| all.iter().map(move |&io| Spec { io, ..family }))
        .collect();
    for family in families(300) {
        if matches!(
            family.mapping,
            Mapping::Persistent | Mapping::Cluster { ctas: 16 } | Mapping::Staged
        ) {
            specs.extend(
                all.iter()
                    .filter(|io| io.order == Order::Sorted)
                    .map(|&io| Spec { io, ..family }),
            );
        }
    }
    specs.extend(
        families(2048)
            .into_iter()
            .filter(|f| f.mapping != Mapping::RowLocal(RowLocalVariant::Register))
            .map(|family| Spec {
                io: call_support::REREAD,
                ..family
            }),
    );
    specs
}

/// Every kernel the tests above plan on an H200 (sm_90a), compiled through the disk cache of
/// `TOPK_CACHE_DIR` on a machine without a GPU (on every core): a GPU host given that cache (and
/// an NVRTC of the same major.minor version) loads them instead of compiling each one there.
#[test]
#[ignore = "build machine: fills TOPK_CACHE_DIR for a GPU host"]
fn warm_the_kernel_cache_for_sm90a() {
    use topk_runtime::cuda::cache::CacheSettings;
    assert!(
        CacheSettings::from_env().dir.is_some(),
        "set TOPK_CACHE_DIR"
    );
    let arch: topk_runtime::cuda::Arch = "sm_90a".parse().expect("sm_90a");
    warm_kernels(arch, &call_test_specs());
}

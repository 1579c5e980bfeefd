//! 16-bit scores (`dtype=f16`, `dtype=bf16`) on the GPU against the CPU reference: every kernel
//! family, plain and with every part of the call interface (values in the score dtype, sorted
//! output, lowest-index ties, row windows at odd offsets, decode rows, offset and page-table
//! transforms), on benign and adversarial rows (ties at rank K, +-inf, signed zeros, the 16-bit
//! types' subnormals, random bit patterns) of lengths 0, 1, K - 1, K, K + 1 and longer, at an odd
//! row pitch so that rows start at every 2-byte alignment. Outputs are checked by
//! `cpu::verify_with`, compared with `cpu::oracle_with` byte for byte where canonical (sorted,
//! lowest ties) and as index sets with lowest ties alone; routes are the CPU backend's. Scores
//! outside each row's window are NaN, so a read beyond a window is caught; a NaN inside one is
//! reported. Every test needs a GPU and is ignored unless run with `--ignored` (on a GPU host).
//! They plan with `PlanRequest::allow_unverified`, so that they can check a path while it is held
//! back (`topk_runtime::cuda::HELD_BACK`).

mod call_support;
mod gpu_support;

use call_support::{
    check_against_cpu, inputs, interfaces, row, sampled, sanitize_maps, sanitize_wants, Output,
    Rng, TestScore, FAMILIES,
};
use gpu_support::{gpu, warm_kernels};
use half::{bf16, f16};
use topk_dsl::{Digits, Dtype, Io, Mapping, Proposal, RowLocalVariant, Spec};
use topk_runtime::call::{row_windows, CallIo, CallOut};
use topk_runtime::cuda::{CudaSelector, Gpu, PlanRequest};
use topk_runtime::{Error, Route, RouteStats, ScoreRows};

const WIDTH: usize = 3000;
/// An odd pitch: consecutive rows start at both 2-byte alignments within a 16-byte vector.
const PITCH: usize = WIDTH + 3;

fn lens(k: usize) -> [usize; 9] {
    [0, 1, k - 1, k, k + 1, 700, 1500, WIDTH - 1, WIDTH]
}

/// One spec of every kernel family at rank k (`call_support::families`) with scores of `dtype`.
fn families(k: u32, dtype: Dtype) -> Vec<Spec> {
    call_support::families(k)
        .into_iter()
        .map(|base| Spec {
            dtype,
            digits: Digits::default_for(dtype, base.coarse_bits),
            ..base
        })
        .collect()
}

/// Rows of the 16-bit type's subnormals of both signs, with zeros of both signs, +-inf and a
/// few normal scores, so that rank K falls among subnormals and ties.
fn subnormal_row<T: TestScore>(rng: &mut Rng, len: usize) -> Vec<T> {
    // Mantissa bits of the type: 10 for FP16, 7 for bfloat16.
    let mantissa = if T::DTYPE == Dtype::Bf16 { 0x7f } else { 0x3ff };
    (0..len)
        .map(|_| match rng.below(16) {
            0 => T::from_f32(f32::INFINITY),
            1 => T::from_f32(f32::NEG_INFINITY),
            2 => T::from_f32(0.0),
            3 => T::from_f32(-0.0),
            4 => T::from_f32(rng.gaussian()),
            s => {
                let sign = if s % 2 == 0 { 0x8000 } else { 0 };
                // Few distinct magnitudes: many ties among the subnormals.
                let bits = 1 + (rng.below(mantissa as usize) as u32 & 0x1f);
                T::from_bits_u32(sign | bits)
            }
        })
        .collect()
}

/// `data` with NaN outside each row's window under `spec` and `io`.
fn masked<T: TestScore>(
    data: &[T],
    rows: usize,
    width: usize,
    pitch: usize,
    spec: &Spec,
    io: &CallIo,
) -> Vec<T> {
    let windows = row_windows(spec.io.rows, &io.rows, rows, width).unwrap();
    let mut out = vec![T::from_f32(f32::NAN); data.len()];
    for (r, w) in windows.iter().enumerate() {
        let at = r * pitch + w.start;
        out[at..at + w.len].copy_from_slice(&data[at..at + w.len]);
    }
    out
}

fn run_gpu<T: TestScore>(
    sel: &mut CudaSelector,
    spec: &Spec,
    scores: &ScoreRows<T>,
    io: &CallIo,
    label: &str,
) -> (Output<T>, RouteStats) {
    let k = spec.k as usize;
    let mut indices = vec![i32::MIN; scores.rows * k];
    let mut values = spec
        .io
        .values
        .then(|| vec![T::from_f32(f32::NAN); scores.rows * k]);
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

/// Every spec of `bases` with every interface of `ios`.
fn with_ios(bases: &[Spec], ios: &[Io]) -> Vec<Spec> {
    bases
        .iter()
        .flat_map(|&base| ios.iter().map(move |&io| Spec { io, ..base }))
        .collect()
}

/// Row family `f` of the shared families, or (one past them) the subnormal rows.
fn any_row<T: TestScore>(f: usize, rng: &mut Rng, k: usize) -> Vec<T> {
    match FAMILIES.get(f) {
        Some(&family) => row::<T>(family, rng, WIDTH, k),
        None => subnormal_row::<T>(rng, WIDTH),
    }
}

/// Each interface of `ios` on `family` over the row families `row_families` ([`any_row`]);
/// returns the routes seen.
fn check_family<T: TestScore>(
    gpu: &Gpu,
    family: Spec,
    ios: &[Io],
    row_families: &[usize],
    seed: u64,
) -> Vec<Route> {
    let k = family.k as usize;
    let lens = lens(k);
    let rows = lens.len();
    let mut rng = Rng::new(seed);
    let mut seen = Vec::new();
    for &io in ios {
        let spec = Spec { io, ..family };
        let mut request = PlanRequest::new(spec.k, rows as u32, WIDTH as u32).with_spec(spec);
        request.pitch = PITCH as u64;
        request.allow_unverified = true;
        let mut sel =
            CudaSelector::new(gpu, request).unwrap_or_else(|e| panic!("{spec}: plan: {e}"));
        for &f in row_families {
            let mut data = vec![T::from_f32(f32::NAN); rows * PITCH];
            for r in 0..rows {
                let values = any_row::<T>(f, &mut rng, k);
                data[r * PITCH..][..WIDTH].copy_from_slice(&values);
            }
            let page_size = [1, 3, 64][f % 3];
            let arrays = inputs(&mut rng, &lens, WIDTH, page_size, f % 2 == 1);
            let call = arrays.io(&spec);
            let data = masked(&data, rows, WIDTH, PITCH, &spec, &call);
            let scores = ScoreRows {
                data: &data,
                rows,
                width: WIDTH,
                pitch: PITCH,
            };
            let label = format!("{spec} / row family {f} / page size {page_size}");
            let (got, stats) = run_gpu(&mut sel, &spec, &scores, &call, &label);
            check_against_cpu(&spec, &scores, &call, &got, &stats, &label);
            seen.extend(stats.per_row.unwrap_or_default());
        }
    }
    seen
}

fn every_family<T: TestScore>(gpu: &Gpu) {
    let mut routes = std::collections::BTreeSet::new();
    // The plain operator, then interfaces that together use every part.
    let all: Vec<Io> = std::iter::once(Io::DEFAULT).chain(interfaces()).collect();
    let row_families: Vec<usize> = (0..=FAMILIES.len()).collect();
    warm_kernels(gpu.arch(), &with_ios(&families(64, T::DTYPE), &all));
    for (n, family) in families(64, T::DTYPE).into_iter().enumerate() {
        routes.extend(check_family::<T>(
            gpu,
            family,
            &all,
            &row_families,
            200 + n as u64,
        ));
    }
    for route in [Route::Short, Route::Primary, Route::DirectExact] {
        assert!(routes.contains(&route), "{}: {routes:?}", T::DTYPE);
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn every_family_selects_f16_scores_as_the_cpu_does() {
    every_family::<f16>(&gpu());
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn every_family_selects_bf16_scores_as_the_cpu_does() {
    every_family::<bf16>(&gpu());
}

/// Long rows (the aligned body of the row stream, the sampled routes at the default stride, and
/// frontiers too large for shared memory, which refine by re-reading the row) with ties at rank
/// K, sorted values and lowest ties, on every family but the register tile.
fn long_rows<T: TestScore>(gpu: &Gpu) {
    let (rows, width, k) = (6usize, 90_001usize, 2048usize);
    let pitch = width + 5;
    let mut rng = Rng::new(21);
    let lens = [width, width - 1, 70_001, k + 1, width - 7, 50_000];
    let bases: Vec<Spec> = families(k as u32, T::DTYPE)
        .into_iter()
        // The register tile takes rows of at most 16K scores.
        .filter(|base| base.mapping != Mapping::RowLocal(RowLocalVariant::Register))
        .map(|base| match base.proposal {
            Proposal::Sampled { .. } => Spec {
                proposal: sampled(128, 150, 175),
                ..base
            },
            Proposal::Exact => base,
        })
        .collect();
    let specs = with_ios(&bases, &[Io::DEFAULT, call_support::REREAD]);
    warm_kernels(gpu.arch(), &specs);
    for family in [
        call_support::Family::Gaussian,
        call_support::Family::AllEqual,
        call_support::Family::TiesAtRankK,
        call_support::Family::RandomBits,
    ] {
        let mut data = vec![T::from_f32(f32::NAN); rows * pitch];
        for r in 0..rows {
            data[r * pitch..][..width].copy_from_slice(&row::<T>(family, &mut rng, width, k));
        }
        for &spec in &specs {
            let arrays = inputs(&mut rng, &lens, width, 1, false);
            let call = arrays.io(&spec);
            let data = masked(&data, rows, width, pitch, &spec, &call);
            let scores = ScoreRows {
                data: &data,
                rows,
                width,
                pitch,
            };
            let mut request = PlanRequest::new(spec.k, rows as u32, width as u32).with_spec(spec);
            request.pitch = pitch as u64;
            request.allow_unverified = true;
            let mut sel = CudaSelector::new(gpu, request).unwrap();
            let label = format!("{spec} / {family:?} / {width} wide");
            let (got, stats) = run_gpu(&mut sel, &spec, &scores, &call, &label);
            check_against_cpu(&spec, &scores, &call, &got, &stats, &label);
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn long_sixteen_bit_rows_with_ties_select_as_the_cpu_does() {
    let gpu = gpu();
    long_rows::<f16>(&gpu);
    long_rows::<bf16>(&gpu);
}

/// A NaN inside a row's window (a short row's too, whose scores the values read) is reported
/// with its row and column; the other rows are never partly written.
fn nan_reported<T: TestScore>(gpu: &Gpu) {
    let k = 64usize;
    let lens = lens(k);
    let rows = lens.len();
    let mut rng = Rng::new(31);
    let values = Io {
        values: true,
        ..Io::DEFAULT
    };
    let specs = with_ios(&families(k as u32, T::DTYPE), &[values]);
    warm_kernels(gpu.arch(), &specs);
    for spec in specs {
        let mut request = PlanRequest::new(spec.k, rows as u32, WIDTH as u32).with_spec(spec);
        request.pitch = PITCH as u64;
        request.allow_unverified = true;
        let mut sel = CudaSelector::new(gpu, request).unwrap();
        for (nan_row, col) in [(2usize, k / 2), (8, 1234), (6, 1499)] {
            let mut data = vec![T::from_f32(0.0); rows * PITCH];
            for r in 0..rows {
                data[r * PITCH..][..WIDTH].copy_from_slice(&row::<T>(
                    FAMILIES[1],
                    &mut rng,
                    WIDTH,
                    k,
                ));
            }
            data[nan_row * PITCH + col] = T::from_f32(f32::NAN);
            let arrays = inputs(&mut rng, &lens, WIDTH, 1, false);
            let call = arrays.io(&spec);
            let scores = ScoreRows {
                data: &data,
                rows,
                width: WIDTH,
                pitch: PITCH,
            };
            let mut indices = vec![7i32; rows * k];
            let mut values = vec![T::from_f32(1.0); rows * k];
            let out = CallOut {
                indices: &mut indices,
                pitch: k,
                values: Some(&mut values),
                boundary: None,
            };
            match sel.select_call(&scores, &call, out, false) {
                Err(Error::NaN { row: r, col: c }) => assert_eq!((r, c), (nan_row, col), "{spec}"),
                other => panic!("{spec}: NaN at ({nan_row}, {col}) gave {other:?}"),
            }
            assert!(
                indices.iter().all(|&i| i == 7),
                "{spec}: output written on error"
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn nan_in_sixteen_bit_rows_is_reported() {
    let gpu = gpu();
    nan_reported::<f16>(&gpu);
    nan_reported::<bf16>(&gpu);
}

/// For compute-sanitizer (bench/sanitize.sh): each family of `TOPK_SANITIZE_MAPS` (default: all)
/// with f16 and bf16 scores, two interfaces that use every part between them, on short rows of
/// ties at rank K and of subnormals, each output checked against the CPU as above.
#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host (bench/sanitize.sh runs it)"]
fn sanitizer_workload_sixteen_bit() {
    let gpu = gpu();
    let maps = sanitize_maps();
    let wanted = |spec: &Spec| sanitize_wants(&maps, spec);
    let all = interfaces();
    // Values, sorted order, lowest ties, an absolute window, decode rows and the page table.
    let ios = [all[5], all[6]];
    // Ties at rank K and the subnormal rows (one past the shared families).
    let ties = FAMILIES
        .iter()
        .position(|f| matches!(f, call_support::Family::TiesAtRankK))
        .unwrap();
    let row_families = [ties, FAMILIES.len()];
    let mut specs = with_ios(&families(64, Dtype::F16), &ios);
    specs.extend(with_ios(&families(64, Dtype::Bf16), &ios));
    specs.retain(|spec| wanted(spec));
    warm_kernels(gpu.arch(), &specs);
    let mut ran = 0;
    for (n, family) in families(64, Dtype::F16)
        .into_iter()
        .filter(wanted)
        .enumerate()
    {
        ran += check_family::<f16>(&gpu, family, &ios, &row_families, 300 + n as u64).len();
    }
    for (n, family) in families(64, Dtype::Bf16)
        .into_iter()
        .filter(wanted)
        .enumerate()
    {
        ran += check_family::<bf16>(&gpu, family, &ios, &row_families, 400 + n as u64).len();
    }
    assert!(ran > 0, "TOPK_SANITIZE_MAPS={maps} names no family");
}

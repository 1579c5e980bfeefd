//! GPU selectors against the CPU backend: exact on every family and route-for-route equal.
//! Every test needs a GPU and is ignored unless run with `--ignored` (on a GPU host).

use cudarc::driver::CudaSlice;
use topk_dsl::{Centi, Mapping, Proposal, RowLocalVariant, Spec};
use topk_runtime::cpu;
use topk_runtime::cuda::launch::status;
use topk_runtime::cuda::{
    CudaSelector, Gpu, LaunchBuffers, Plan, PlanRequest, SpecSource, Workspace,
};
use topk_runtime::policy::DeviceFacts;
use topk_runtime::{Error, ScoreMatrix};

mod gpu_support;
use gpu_support::gpu;

/// Small counter-based generator for test matrices (independent of the data module).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const FAMILIES: &[&str] = &[
    "uniform",
    "gauss",
    "all-equal",
    "two-values",
    "ties-at-k",
    "sorted-asc",
    "sorted-desc",
    "periodic",
    "infinities",
    "signed-zeros",
    "subnormals",
    "huge",
    "tiny",
    "endpoints",
];

fn family_value(family: &str, rng: &mut Rng, i: usize, len: usize, k: usize) -> f32 {
    match family {
        "uniform" => rng.unit(),
        "gauss" => rng.unit() + rng.unit() + rng.unit() + rng.unit() - 2.0,
        "all-equal" => 0.75,
        "two-values" => {
            if rng.below(3) == 0 {
                1.0
            } else {
                -1.0
            }
        }
        "ties-at-k" => {
            if i < k / 2 {
                5.0
            } else if i < 2 * k {
                3.0
            } else {
                rng.unit()
            }
        }
        "sorted-asc" => i as f32 * 1e-3,
        "sorted-desc" => -(i as f32) * 1e-3,
        "periodic" => {
            if i.is_multiple_of(128) {
                10.0 + rng.unit()
            } else {
                rng.unit()
            }
        }
        "infinities" => match rng.below(50) {
            0 => f32::INFINITY,
            1 => f32::NEG_INFINITY,
            _ => rng.unit(),
        },
        "signed-zeros" => match rng.below(100) {
            0 => rng.unit(),
            1 => -rng.unit(),
            n if n % 2 == 0 => 0.0,
            _ => -0.0,
        },
        "subnormals" => {
            f32::from_bits(1 + rng.below(0x007f_ffff) as u32)
                * if rng.below(2) == 0 { 1.0 } else { -1.0 }
        }
        "huge" => 7e4 + rng.unit() * 1e6,
        "tiny" => (rng.unit() - 0.5) * 1e-9,
        "endpoints" => {
            let d = i.min(len.saturating_sub(1 + i)) as f32;
            rng.unit() * 0.5 + 4.0 / (1.0 + d / 512.0)
        }
        _ => unreachable!(),
    }
}

struct Case {
    data: Vec<f32>,
    lengths: Vec<i32>,
    width: usize,
    pitch: usize,
}

impl Case {
    /// Every row of the case as a score matrix.
    fn matrix(&self) -> ScoreMatrix<'_> {
        ScoreMatrix {
            data: &self.data,
            rows: self.lengths.len(),
            width: self.width,
            pitch: self.pitch,
            lengths: &self.lengths,
        }
    }
}

fn make_case(family: &str, seed: u64, rows: usize, width: usize, pitch: usize, k: usize) -> Case {
    let mut rng = Rng(seed);
    let specials = [0, 1, k.saturating_sub(1), k, k + 1, width];
    let lengths: Vec<i32> = (0..rows)
        .map(|r| {
            if r < specials.len() {
                specials[r].min(width) as i32
            } else {
                (width / 2 + rng.below((width / 2) as u64 + 1) as usize) as i32
            }
        })
        .collect();
    let mut data = vec![f32::NAN; rows * pitch];
    for (r, &len) in lengths.iter().enumerate() {
        for i in 0..width {
            data[r * pitch + i] = if i < len as usize {
                family_value(family, &mut rng, i, len as usize, k)
            } else {
                -1e30
            };
        }
    }
    // Padding between width and pitch stays NaN: a kernel that reads past a row's length fails.
    Case {
        data,
        lengths,
        width,
        pitch,
    }
}

fn spec_with(k: u32, mapping: Mapping, proposal: Proposal, threads: u32) -> Spec {
    Spec {
        k,
        mapping,
        proposal,
        threads,
        ..Spec::default()
    }
}

fn specs(k: u32) -> Vec<Spec> {
    let sampled = |stride, rescue| Proposal::Sampled {
        stride,
        rho: Centi(150),
        rescue,
        exact_below: 0,
    };
    vec![
        spec_with(k, Mapping::Persistent, sampled(128, Some(Centi(175))), 512),
        spec_with(k, Mapping::Persistent, sampled(64, None), 512),
        spec_with(
            k,
            Mapping::Persistent,
            Proposal::Sampled {
                stride: 128,
                rho: Centi(100),
                rescue: None,
                exact_below: 0,
            },
            512,
        ),
        spec_with(k, Mapping::Persistent, Proposal::Exact, 512),
        // Four CTAs per SM, their streams sending two batches ahead to L2.
        Spec {
            prefetch: 2,
            ..spec_with(k, Mapping::Persistent, sampled(128, Some(Centi(250))), 256)
        },
        // Three CTAs per SM (the default's block size for many rows up to 128K, with its
        // prefetch) with the pair view and a narrow margin (rho 1.5, rescue 1.75), so that
        // rescue routes occur.
        Spec {
            view_run: 2,
            prefetch: 1,
            ..spec_with(k, Mapping::Persistent, sampled(128, Some(Centi(175))), 384)
        },
        spec_with(
            k,
            Mapping::RowLocal(RowLocalVariant::Streaming),
            Proposal::Exact,
            1024,
        ),
        spec_with(
            k,
            Mapping::KvSplit { splits: 2 },
            sampled(128, Some(Centi(175))),
            512,
        ),
        spec_with(k, Mapping::KvSplit { splits: 4 }, sampled(64, None), 512),
        spec_with(
            k,
            Mapping::KvSplit { splits: 8 },
            sampled(128, Some(Centi(250))),
            512,
        ),
        spec_with(k, Mapping::Cluster { ctas: 8 }, Proposal::Exact, 1024),
        // 16-CTA clusters (non-portable size).
        spec_with(k, Mapping::Cluster { ctas: 16 }, Proposal::Exact, 1024),
        // Sampled clusters: a narrow margin with a rescue boundary (so that primary, rescue and
        // recovery rows occur), on 1024- and 512-thread CTAs, and the pair-grouped view on 16
        // CTAs.
        spec_with(
            k,
            Mapping::Cluster { ctas: 8 },
            sampled(128, Some(Centi(175))),
            512,
        ),
        spec_with(
            k,
            Mapping::Cluster { ctas: 8 },
            sampled(128, Some(Centi(175))),
            1024,
        ),
        Spec {
            view_run: 2,
            ..spec_with(
                k,
                Mapping::Cluster { ctas: 16 },
                sampled(128, Some(Centi(250))),
                1024,
            )
        },
        // Grouped views (view=run(R)) on the persistent and KV-split kernels.
        Spec {
            view_run: 4,
            ..spec_with(k, Mapping::Persistent, sampled(128, Some(Centi(250))), 512)
        },
        Spec {
            view_run: 8,
            ..spec_with(k, Mapping::KvSplit { splits: 2 }, sampled(64, None), 512)
        },
        Spec {
            view_run: 2,
            ..spec_with(k, Mapping::Persistent, sampled(128, None), 512)
        },
        // The default persistent policy (pair-grouped view at K = 2048) and its stride view.
        topk_runtime::policy::persistent_spec(k),
        topk_runtime::policy::context_parallel_spec(k),
        // The default map's short-row persistent kernel (256-thread CTAs, below 2048 rows).
        topk_runtime::policy::default_spec(&DeviceFacts::h200(), k, 1024, 65_536),
        // The stage chain (default for a few very long rows), with a narrow margin so that
        // rescue and recovery routes occur, and the exact proposal.
        topk_runtime::policy::staged_spec(k),
        spec_with(k, Mapping::Staged, sampled(128, Some(Centi(175))), 512),
        spec_with(k, Mapping::Staged, Proposal::Exact, 256),
    ]
}

/// The one-rank context-parallel CPU model's statistics of `case`.
fn staged_cpu_stats(spec: &Spec, case: &Case) -> topk_runtime::RouteStats {
    use topk_runtime::cpu::sharded::{select_sharded, ShardedScores};
    let rows = case.lengths.len();
    let k = spec.k as usize;
    let compact: Vec<f32> = (0..rows)
        .flat_map(|r| case.data[r * case.pitch..][..case.width].iter().copied())
        .collect();
    let shards = [compact.as_slice()];
    let scores = ShardedScores {
        sharding: topk_runtime::sharding::Sharding::new(1, case.width).unwrap(),
        shards: &shards,
        lengths: &case.lengths,
        rows,
    };
    let mut out = vec![0; rows * k];
    select_sharded(spec, &scores, &mut out, k, true).unwrap()
}

fn check_against_cpu(
    gpu: &Gpu,
    spec: Spec,
    case: &Case,
    label: &str,
) -> (u64, [u64; topk_runtime::Route::ALL.len()]) {
    let k = spec.k as usize;
    let rows = case.lengths.len();
    let m = case.matrix();
    let mut request = PlanRequest::new(spec.k, rows as u32, case.width as u32).with_spec(spec);
    request.pitch = case.pitch as u64;
    let mut sel =
        CudaSelector::new(gpu, request).unwrap_or_else(|e| panic!("{label}: plan failed: {e}"));
    let mut out = vec![i32::MIN; rows * k];
    let gpu_stats = sel
        .select_host(&m, &mut out, k, true)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let report = cpu::verify(&m, k, &out, k).unwrap();
    assert!(
        report.is_exact(),
        "{label}: GPU output not exact: {:?}",
        report.violations
    );
    let mut cpu_out = vec![0; rows * k];
    let mut cpu_stats = cpu::select(&spec, &m, &mut cpu_out, k, true).unwrap();
    assert_eq!(
        gpu_stats.per_row, cpu_stats.per_row,
        "{label}: GPU routes differ from the CPU backend's"
    );
    if spec.mapping == Mapping::Staged {
        // The stage chain reports the frontier it refines (the whole row on the exact routes),
        // as the CPU model of the context-parallel selector does with one rank.
        cpu_stats = staged_cpu_stats(&spec, case);
        assert_eq!(
            gpu_stats.per_row, cpu_stats.per_row,
            "{label}: staged routes"
        );
    }
    assert_eq!(
        gpu_stats.candidates, cpu_stats.candidates,
        "{label}: |Q0| totals differ"
    );
    (rows as u64, gpu_stats.rows)
}

/// `spec` against the CPU backend on one case of every adversarial family: `rows` rows, family
/// f's `width + step * f` wide with a pitch `pad` wider, seeded from `seed + f + K`. Returns the
/// rows checked and the rows per route.
fn check_every_family(
    gpu: &Gpu,
    spec: Spec,
    rows: usize,
    (width, step, pad): (usize, usize, usize),
    seed: u64,
) -> (u64, [u64; topk_runtime::Route::ALL.len()]) {
    let mut rows_total = 0;
    let mut per_route = [0u64; topk_runtime::Route::ALL.len()];
    for (f, family) in FAMILIES.iter().enumerate() {
        let width = width + step * f;
        let case = make_case(
            family,
            seed + f as u64 + spec.k as u64,
            rows,
            width,
            width + pad,
            spec.k as usize,
        );
        let label = format!("{spec} / {family} / {rows} rows");
        let (n, r) = check_against_cpu(gpu, spec, &case, &label);
        rows_total += n;
        for i in 0..5 {
            per_route[i] += r[i];
        }
    }
    (rows_total, per_route)
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn gpu_is_exact_and_matches_cpu_routes_on_every_family() {
    let gpu = gpu();
    let mut rows_total = 0;
    // These specs take no prior: gpu_prior exercises the prior's two routes.
    let mut per_route = [0u64; topk_runtime::Route::WITHOUT_PRIOR.len()];
    for &k in &[512u32, 2048] {
        for spec in specs(k) {
            let (n, r) = check_every_family(&gpu, spec, 24, (40_000, 7, 3), 1000);
            rows_total += n;
            for (i, route) in topk_runtime::Route::WITHOUT_PRIOR.iter().enumerate() {
                per_route[i] += r[*route as usize];
            }
        }
    }
    eprintln!(
        "checked {rows_total} rows; routes short/primary/rescue/recovery/direct = {per_route:?}"
    );
    assert!(
        per_route.iter().all(|&c| c > 0),
        "every route of a call without a prior must be exercised: {per_route:?}"
    );
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn persistent_workers_with_several_rows_each_are_exact() {
    let gpu = gpu();
    // More rows than workers (two 512-thread CTAs per SM), so every worker claims further rows
    // and its shared state (counters, histograms, frontiers, spill slice) carries over from row
    // to row; the case's lengths put short, underfilled and sampled rows side by side. Route for
    // route against the CPU backend.
    for &k in &[512u32, 2048] {
        for spec in specs(k).into_iter().take(3) {
            check_every_family(&gpu, spec, 800, (12_000, 5, 1), 77);
        }
    }
    // The second half of the pool starting late and the tail margin on the pool's last rows
    // (the default map's for many long rows), on the default policy's view and margin, every
    // row of the case sampled (no exact_below): four rows per worker of two 512-thread CTAs per
    // SM, above the three live rows per worker from which the kernel staggers and at the most
    // rows a tail margin covers, so the last quarter of the rows proposes at the tail's rank.
    let default = topk_runtime::policy::persistent_spec(2048);
    let pool = 2 * gpu.props().sms;
    let staggered_with_tail = Spec {
        stagger_us: topk_runtime::policy::STAGGER_US,
        tail_rows: pool,
        tail_rho: topk_runtime::policy::TAIL_RHO,
        proposal: default.proposal.with_exact_below(0),
        ..default
    };
    let rows = (topk_dsl::TAIL_MAX_WAVES * pool) as usize;
    check_every_family(&gpu, staggered_with_tail, rows, (12_000, 5, 1), 78);
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn register_rowlocal_is_exact_on_short_rows() {
    let gpu = gpu();
    for &k in &[512u32, 2048] {
        let spec = spec_with(
            k,
            Mapping::RowLocal(RowLocalVariant::Register),
            Proposal::Exact,
            1024,
        );
        for (f, family) in FAMILIES.iter().enumerate() {
            let case = make_case(family, 77 + f as u64, 40, 16_384, 16_385, k as usize);
            check_against_cpu(&gpu, spec, &case, &format!("{spec} / {family}"));
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn long_rows_and_other_ranks_are_exact() {
    let gpu = gpu();
    for &(k, width) in &[
        (1u32, 300_000usize),
        (100, 300_000),
        (4096, 300_000),
        (2048, 1 << 20),
    ] {
        for spec in specs(k).into_iter().take(2) {
            for family in ["gauss", "endpoints", "ties-at-k"] {
                let case = make_case(
                    family,
                    k as u64 + width as u64,
                    10,
                    width,
                    width,
                    k as usize,
                );
                check_against_cpu(&gpu, spec, &case, &format!("{spec} / {family} / N={width}"));
            }
        }
    }
}

fn upload<T: cudarc::driver::DeviceRepr>(gpu: &Gpu, v: &[T]) -> CudaSlice<T> {
    gpu.stream().clone_htod(v).unwrap()
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn unaligned_base_pointer_is_exact() {
    let gpu = gpu();
    let k = 2048usize;
    let case = make_case("gauss", 5, 16, 70_001, 70_001, k);
    for shift in 1..4usize {
        let mut shifted = vec![0.0f32; shift];
        shifted.extend_from_slice(&case.data);
        let plan = Plan::new(&gpu, {
            let mut r = PlanRequest::new(k as u32, 16, case.width as u32);
            r.pitch = case.pitch as u64;
            r
        })
        .unwrap();
        let stream = gpu.stream();
        let mut ws = Workspace::new(&plan, stream).unwrap();
        let d_scores = upload(&gpu, &shifted);
        let d_len = upload(&gpu, &case.lengths);
        let d_live = upload(&gpu, &[16i32]);
        let mut d_out = stream.alloc_zeros::<i32>(16 * k).unwrap();
        {
            let s = d_scores.slice(shift..);
            let (l, r) = (d_len.slice(..), d_live.slice(..));
            let mut o = d_out.slice_mut(..);
            plan.launch(
                stream,
                LaunchBuffers {
                    scores: &s,
                    lengths: &l,
                    live_rows: &r,
                    out: &mut o,
                    row_info: None,
                },
                &mut ws,
            )
            .unwrap();
        }
        let out = stream.clone_dtoh(&d_out).unwrap();
        let m = case.matrix();
        let rep = cpu::verify(&m, k, &out, k).unwrap();
        assert!(
            rep.is_exact(),
            "base shifted by {shift} floats: {:?}",
            rep.violations
        );
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn rows_beyond_the_live_count_are_untouched_and_graph_replays_follow_new_inputs() {
    let gpu = gpu();
    check_graph_replays(&gpu, None);
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn kvsplit_slots_and_counters_survive_graph_replays() {
    let gpu = gpu();
    let sampled = Proposal::Sampled {
        stride: 128,
        rho: Centi(150),
        rescue: Some(Centi(175)),
        exact_below: 0,
    };
    for splits in [2, 4, 8] {
        check_graph_replays(
            &gpu,
            Some(spec_with(2048, Mapping::KvSplit { splits }, sampled, 512)),
        );
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn staged_plans_clear_their_workspace_and_follow_graph_replays() {
    let gpu = gpu();
    let spec = topk_runtime::policy::staged_spec(2048);
    check_graph_replays(&gpu, Some(spec));
    // The status word lives in the stage chain's workspace: a NaN is found and located.
    let k = 2048usize;
    // Rows 0-5 have the special lengths (0, 1, K - 1, K, K + 1, N); row 6 is long.
    let mut case = make_case("gauss", 5, 8, 300_000, 300_000, k);
    case.data[6 * case.pitch + 12_345] = f32::NAN;
    let m = case.matrix();
    let request = PlanRequest::new(k as u32, 8, case.width as u32).with_spec(spec);
    let mut sel = CudaSelector::new(&gpu, request).unwrap();
    let mut out = vec![0; 8 * k];
    match sel.select_host(&m, &mut out, k, false) {
        Err(Error::NaN { row, col }) => assert_eq!((row, col), (6, 12_345)),
        other => panic!("expected a NaN error, got {other:?}"),
    }
    // The next call starts from a clear status and is exact.
    case.data[6 * case.pitch + 12_345] = 0.25;
    let m = case.matrix();
    sel.select_host(&m, &mut out, k, false).unwrap();
    assert!(cpu::verify(&m, k, &out, k).unwrap().is_exact());
}

/// Rows beyond the live count stay untouched, and one captured graph follows new lengths and a
/// new row count written on the device between replays.
fn check_graph_replays(gpu: &Gpu, spec: Option<Spec>) {
    use topk_runtime::cuda::cudarc::driver::sys;
    use topk_runtime::cuda::DeviceMatrix;
    let k = 2048usize;
    let m_cap = 32usize;
    let case = make_case("endpoints", 9, m_cap, 100_000, 100_000, k);
    let mut request = PlanRequest::new(k as u32, m_cap as u32, case.width as u32);
    request.spec = spec;
    let plan = Plan::new(gpu, request).unwrap();
    let stream = gpu.stream().clone();
    let mut ws = Workspace::new(&plan, &stream).unwrap();
    let mut m =
        DeviceMatrix::upload(gpu, &case.data, &case.lengths, case.width, case.pitch).unwrap();
    let mut d_out = upload(gpu, &vec![-7i32; m_cap * k]);
    // Capture one graph; later replays see new lengths and row counts written on the device.
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    m.launch(&plan, &stream, &mut d_out, None, &mut ws).unwrap();
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a graph");
    let halved: Vec<i32> = case.lengths.iter().map(|&l| (l / 3).max(1)).collect();
    for (live_rows, lengths) in [(10usize, &case.lengths), (20, &halved), (7, &case.lengths)] {
        stream
            .memcpy_htod(lengths.as_slice(), &mut m.lengths)
            .unwrap();
        stream
            .memcpy_htod(&[live_rows as i32], &mut m.live_rows)
            .unwrap();
        stream
            .memcpy_htod(&vec![-7i32; m_cap * k], &mut d_out)
            .unwrap();
        for _ in 0..3 {
            graph.launch().unwrap();
        }
        let out = stream.clone_dtoh(&d_out).unwrap();
        let live = ScoreMatrix {
            data: &case.data,
            rows: live_rows,
            width: case.width,
            pitch: case.pitch,
            lengths: &lengths[..live_rows],
        };
        let rep = cpu::verify(&live, k, &out, k).unwrap();
        assert!(
            rep.is_exact(),
            "{live_rows} live rows: {:?}",
            rep.violations
        );
        assert!(
            out[live_rows * k..].iter().all(|&v| v == -7),
            "rows >= m were written"
        );
    }
    assert_eq!(ws.status(&stream).unwrap(), 0);
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn the_default_map_plans_and_is_exact_at_every_width_class() {
    let gpu = gpu();
    // Streaming row-local (small batches below 48K), persistent (512+ rows up to 16K, 1024+
    // wider ones; 256-thread CTAs for the large batch of short rows, rho = 1.5 up to 64K;
    // 384-thread CTAs for 2048 rows of 16K, every row exact by exact_below; rho = 2 from 512K),
    // the cluster kernel (16 CTAs for 1-7 rows, exact at 1M and sampled at 4M; 8 CTAs, sampled,
    // for 8 rows of 1M and 4M, and on 512-thread CTAs for 16 and 32 rows of 1M), the stage chain
    // (16 rows of 4M), K = 2048 (pair-grouped view) and K = 512 (stride view): no spec, the
    // planner's own choice.
    for k in [2048usize, 512] {
        for (rows, width) in [
            (16, 8_192),
            (512, 8_192),
            (16, 40_000),
            (1024, 40_000),
            (2048, 16_384),
            (16, 131_072),
            (600, 131_072),
            (32, 1 << 19),
            (4, 1 << 20),
            (8, 1 << 20),
            (2, 1 << 22),
            (8, 1 << 22),
            (16, 1 << 20),
            (32, 1 << 20),
            (16, 1 << 22),
        ] {
            let case = make_case("gauss", 17 + width as u64, rows, width, width, k);
            let m = case.matrix();
            let request = PlanRequest::new(k as u32, rows as u32, width as u32);
            // No autotune store: the plan is the default map's choice on this device's facts,
            // every device adjustment included (16-CTA clusters only for the rows of one wave,
            // the tail sized to the pool).
            let plan = Plan::with_store(&gpu, request, None)
                .unwrap_or_else(|e| panic!("K={k} {rows}x{width}: the default map: {e}"));
            let expected = topk_runtime::policy::default_spec(
                &gpu.facts(),
                k as u32,
                rows as u32,
                width as u32,
            );
            if (k, rows, width) == (2048, 600, 131_072) {
                assert!(
                    plan.spec.tail_rows == gpu.props().sms * plan.ctas_per_sm
                        && plan.spec.tail_rho == Centi(200),
                    "600 x 128K at K = 2048 takes a tail margin over the pool: {}",
                    plan.spec
                );
            }
            assert_eq!(
                plan.spec, expected,
                "K={k} {rows}x{width}: planned {} instead of {expected}",
                plan.spec
            );
            assert_eq!(plan.source, SpecSource::Default);
            let mut sel = CudaSelector::with_plan(&gpu, plan)
                .unwrap_or_else(|e| panic!("K={k} {rows}x{width}: {e}"));
            let mut out = vec![0; rows * k];
            sel.select_host(&m, &mut out, k, false)
                .unwrap_or_else(|e| panic!("K={k} {rows}x{width}: {e}"));
            let report = cpu::verify(&m, k, &out, k).unwrap();
            assert!(
                report.is_exact(),
                "K={k} {rows}x{width} ({}): {:?}",
                sel.plan().spec,
                report.violations
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn nan_and_bad_lengths_are_reported() {
    let gpu = gpu();
    let k = 512usize;
    let mut case = make_case("gauss", 3, 8, 50_000, 50_000, k);
    // Row 3 has length K (never read: its output does not depend on values); row 6 is long.
    case.data[6 * case.pitch + 777] = f32::NAN;
    let m = case.matrix();
    let mut sel =
        CudaSelector::new(&gpu, PlanRequest::new(k as u32, 8, case.width as u32)).unwrap();
    let mut out = vec![0; 8 * k];
    match sel.select_host(&m, &mut out, k, false) {
        Err(Error::NaN { row, col }) => assert_eq!((row, col), (6, 777)),
        other => panic!("expected a NaN error, got {other:?}"),
    }
    // A bad length on the device raises the status bit (the host API rejects it earlier).
    let plan = Plan::new(&gpu, PlanRequest::new(k as u32, 8, case.width as u32)).unwrap();
    let stream = gpu.stream();
    let mut ws = Workspace::new(&plan, stream).unwrap();
    case.data[6 * case.pitch + 777] = 0.5;
    let mut lengths = case.lengths.clone();
    lengths[2] = case.width as i32 + 5;
    let (d_s, d_l, d_r) = (
        upload(&gpu, &case.data),
        upload(&gpu, &lengths),
        upload(&gpu, &[8i32]),
    );
    let mut d_o = stream.alloc_zeros::<i32>(8 * k).unwrap();
    {
        let (s, l, r) = (d_s.slice(..), d_l.slice(..), d_r.slice(..));
        let mut o = d_o.slice_mut(..);
        plan.launch(
            stream,
            LaunchBuffers {
                scores: &s,
                lengths: &l,
                live_rows: &r,
                out: &mut o,
                row_info: None,
            },
            &mut ws,
        )
        .unwrap();
    }
    assert_eq!(
        ws.status(stream).unwrap() & status::BAD_LENGTH,
        status::BAD_LENGTH
    );
    let _ = d_o.len();
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn device_generator_reproduces_the_cpu_generator_bit_for_bit() {
    use topk_runtime::cuda::DeviceMatrix;
    use topk_runtime::data::{generate, Profile};
    let gpu = gpu();
    let (rows, width, pitch) = (37usize, 9_001usize, 9_003usize);
    let lengths: Vec<i32> = (0..rows).map(|r| (r * 250 % (width + 1)) as i32).collect();
    for profile in Profile::ALL {
        let host = generate(profile, 42, 2048, 0, &lengths, width, pitch).unwrap();
        let dev =
            DeviceMatrix::generate(&gpu, profile.code(), 42, 2048, &lengths, width, pitch).unwrap();
        let back = gpu.stream().clone_dtoh(&dev.scores).unwrap();
        for r in 0..rows {
            for c in 0..width {
                let (a, b) = (host[r * pitch + c], back[r * pitch + c]);
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{profile:?} row {r} col {c}: cpu {a} gpu {b}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn every_generator_profile_is_exact_route_for_route() {
    use topk_runtime::data::{generate, Profile};
    let gpu = gpu();
    for &k in &[512u32, 2048] {
        for spec in specs(k) {
            for profile in Profile::ALL {
                let (rows, width) = (40usize, 65_536usize);
                let ks = k as usize;
                let mut lengths: Vec<i32> =
                    (0..rows).map(|r| (width - rows + r + 1) as i32).collect();
                for (slot, len) in [0, 1, ks - 1, ks, ks + 1].into_iter().enumerate() {
                    lengths[slot] = len as i32;
                }
                let pitch = width + 1;
                let data = generate(profile, 7, k, 0, &lengths, width, pitch).unwrap();
                let case = Case {
                    data,
                    lengths,
                    width,
                    pitch,
                };
                check_against_cpu(&gpu, spec, &case, &format!("{spec} / {profile}"));
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn raw_launch_orders_on_a_callers_stream_and_inside_its_graph() {
    use cudarc::driver::{sys, DevicePtr, DevicePtrMut};
    use topk_runtime::cuda::launch::{RawBuffers, StreamJoin};
    let gpu = gpu();
    let k = 2048usize;
    let rows = 12usize;
    let case = make_case("gauss", 21, rows, 90_000, 90_000, k);
    let plan = Plan::new(
        &gpu,
        PlanRequest::new(k as u32, rows as u32, case.width as u32),
    )
    .unwrap();
    let ours = gpu.stream().clone();
    let caller = gpu.ctx().new_stream().unwrap();
    let mut ws = Workspace::new(&plan, &ours).unwrap();
    let join = StreamJoin::new(&ours).unwrap();
    let d_s = upload(&gpu, &case.data);
    let d_l = upload(&gpu, &case.lengths);
    let d_r = upload(&gpu, &[rows as i32]);
    let mut d_o = ours.alloc_zeros::<i32>(rows * k).unwrap();
    ours.synchronize().unwrap();
    let (s, _g1) = d_s.device_ptr(&ours);
    let (l, _g2) = d_l.device_ptr(&ours);
    let (r, _g3) = d_r.device_ptr(&ours);
    let (o, _g4) = d_o.device_ptr_mut(&ours);
    // Captured on the caller's stream: the selector joins the capture through the events.
    caller
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    let io = RawBuffers {
        scores: s,
        lengths: l,
        live_rows: r,
        out: o,
        row_info: 0,
    };
    unsafe { plan.launch_on_stream(&ours, caller.cu_stream(), &join, io, &mut ws) }.unwrap();
    let graph = caller
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a graph");
    for _ in 0..3 {
        graph.launch().unwrap();
    }
    caller.synchronize().unwrap();
    drop((_g1, _g2, _g3, _g4));
    let out = ours.clone_dtoh(&d_o).unwrap();
    let m = case.matrix();
    let rep = cpu::verify(&m, k, &out, k).unwrap();
    assert!(rep.is_exact(), "{:?}", rep.violations);
}

/// The kernels' closed-form coarse endpoint passes its own check and equals the CPU backend's
/// search on every bin of every coarse width, so its fallback search never runs.
#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn closed_form_coarse_endpoints_equal_the_cpu_search_on_every_bin() {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    use topk_codegen::endpoint_probe::{endpoint_probe_source, ENDPOINT_PROBE_ENTRY};
    let gpu = gpu();
    for bits in 8..=12u32 {
        let source = endpoint_probe_source(bits as u8).unwrap();
        let loaded = gpu.load(&source, ENDPOINT_PROBE_ENTRY, 0).unwrap();
        let bins = 1usize << bits;
        let stream = gpu.stream();
        let mut d_out = stream.alloc_zeros::<u32>(bins).unwrap();
        let mut d_unchecked = stream.alloc_zeros::<i32>(1).unwrap();
        let mut b = stream.launch_builder(&loaded.func);
        b.arg(&mut d_out).arg(&mut d_unchecked);
        let cfg = LaunchConfig {
            grid_dim: (bins.div_ceil(256) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { b.launch(cfg) }.unwrap();
        let out = stream.clone_dtoh(&d_out).unwrap();
        let unchecked = stream.clone_dtoh(&d_unchecked).unwrap()[0];
        assert_eq!(unchecked, 0, "coarse={bits}: bins failing the check");
        for (bin, &bits_out) in out.iter().enumerate() {
            let got = f32::from_bits(bits_out);
            match topk_runtime::keys::coarse_endpoint(bin as u32, 16 - bits) {
                None => assert!(
                    got.is_nan(),
                    "coarse={bits} bin {bin}: {got} for no endpoint"
                ),
                Some(want) => assert_eq!(
                    bits_out,
                    want.to_bits(),
                    "coarse={bits} bin {bin}: device {got}, cpu {want}"
                ),
            }
        }
    }
}

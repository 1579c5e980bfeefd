//! The CPU selector over the whole call interface is exact for every dtype, every combination
//! of values, order, ties, row source and transform, on benign and adversarial rows of the
//! lengths that matter (0, 1, K-1, K, K+1, long, full width; windows at the row's start, end and
//! middle; page sizes 1, 3 and 64): checked by `verify_with` and against `oracle_with`
//! (canonical bytes where the spec makes them canonical).

mod call_support;

use call_support::{every_io, inputs, row, row_set, run, Output, Rng, TestScore, FAMILIES};
use half::{bf16, f16};
use topk_dsl::{Digits, Dtype, Io, Order, Proposal, Rows, Spec, Ties, Transform};
use topk_runtime::call::CallIo;
use topk_runtime::{cpu, Route, Score, ScoreMatrix, ScoreRows};

const K: usize = 64;
const WIDTH: usize = 3000;
/// Nine rows (three decode groups): empty, one score, around K, long, full width.
const LENS: [usize; 9] = [0, 1, K - 1, K, K + 1, 700, 1500, 2999, 3000];

/// A sampled spec for `T` at rank K: its view (stride 16) holds enough samples on the long rows.
fn base<T: Score>() -> Spec {
    let coarse_bits = 11;
    Spec {
        k: K as u32,
        dtype: T::DTYPE,
        proposal: Proposal::Sampled {
            stride: 16,
            rho: topk_dsl::Centi(150),
            rescue: Some(topk_dsl::Centi(175)),
            exact_below: 0,
        },
        digits: Digits::default_for(T::DTYPE, coarse_bits),
        coarse_bits,
        ..Spec::default()
    }
}

/// `WIDTH`-wide rows of `family` (every position filled, so windows anywhere read real scores).
fn matrix<T: TestScore>(family: call_support::Family, rng: &mut Rng) -> Vec<T> {
    (0..LENS.len())
        .flat_map(|_| row::<T>(family, rng, WIDTH, K))
        .collect()
}

/// The matrix of `LENS.len()` rows of `WIDTH` in `data`.
fn full<T: Score>(data: &[T]) -> ScoreRows<'_, T> {
    ScoreRows {
        data,
        rows: LENS.len(),
        width: WIDTH,
        pitch: WIDTH,
    }
}

fn check_call<T: Score>(spec: &Spec, scores: &ScoreRows<T>, io: &CallIo, what: &str) {
    let got = run(spec, scores, io, false);
    let want = run(spec, scores, io, true);
    for (name, out) in [("selector", &got), ("oracle", &want)] {
        let report =
            cpu::verify_with(spec, scores, io, &out.indices, K, out.values.as_deref()).unwrap();
        assert!(
            report.is_exact(),
            "{what}, {spec}: the {name}'s output: {report}"
        );
    }
    for r in 0..scores.rows {
        let (g, w) = (&got.indices[r * K..][..K], &want.indices[r * K..][..K]);
        let padding = |s: &[i32]| s.iter().filter(|&&i| i == -1).count();
        assert_eq!(padding(g), padding(w), "{what}, {spec}, row {r}");
        if spec.io.ties == Ties::Lowest {
            assert_eq!(
                row_set(&got.indices, K, r),
                row_set(&want.indices, K, r),
                "{what}, {spec}, row {r}: the lowest-index set differs from the oracle's"
            );
        }
    }
    if spec.io.canonical_bytes() {
        assert_eq!(
            got, want,
            "{what}, {spec}: canonical bytes differ from the oracle's"
        );
    }
}

fn every_combination_is_exact<T: TestScore>(seed: u64) {
    let mut rng = Rng::new(seed);
    let mut routes = std::collections::BTreeSet::new();
    for family in FAMILIES {
        let data = matrix::<T>(family, &mut rng);
        let scores = ScoreRows {
            data: &data,
            rows: LENS.len(),
            width: WIDTH,
            pitch: WIDTH,
        };
        for (n, spec) in every_io(base::<T>()).into_iter().enumerate() {
            let page_size = [1, 3, 64][n % 3];
            let inputs = inputs(&mut rng, &LENS, WIDTH, page_size, n % 2 == 0);
            let what = format!("{} {family:?}, page size {page_size}", T::DTYPE);
            check_call(&spec, &scores, &inputs.io(&spec), &what);
            if n == 0 {
                let mut out = vec![0; LENS.len() * K];
                let call = topk_runtime::call::CallOut::indices(&mut out, K);
                let stats =
                    cpu::select_with(&spec, &scores, &inputs.io(&spec), call, true).unwrap();
                routes.extend(Route::ALL.into_iter().filter(|&r| stats.count(r) > 0));
            }
        }
    }
    // Short rows, sampled long rows, and the exact coarse route (rows too short for a view).
    for route in [Route::Short, Route::Primary, Route::DirectExact] {
        assert!(routes.contains(&route), "{}: {routes:?}", T::DTYPE);
    }
}

#[test]
fn every_interface_combination_is_exact_on_f32_rows() {
    every_combination_is_exact::<f32>(1);
}

#[test]
fn every_interface_combination_is_exact_on_f16_rows() {
    every_combination_is_exact::<f16>(2);
}

#[test]
fn every_interface_combination_is_exact_on_bf16_rows() {
    every_combination_is_exact::<bf16>(3);
}

/// The canonical interface: ties to the lowest index, sorted, with values.
fn canonical(spec: Spec) -> Spec {
    Spec {
        io: Io {
            values: true,
            order: Order::Sorted,
            ties: Ties::Lowest,
            ..spec.io
        },
        ..spec
    }
}

/// A 16-bit row and its exact FP32 widening hold the same numbers, so their canonical outputs
/// are the same bytes although one refines 16-bit keys and the other 32-bit keys.
fn sixteen_bit_agrees_with_its_widening<T: TestScore>(seed: u64) {
    let mut rng = Rng::new(seed);
    for family in FAMILIES {
        let data = matrix::<T>(family, &mut rng);
        let wide: Vec<f32> = data.iter().map(|x| x.to_f32()).collect();
        let inputs = inputs(&mut rng, &LENS, WIDTH, 1, false);
        for rows_form in [Rows::Lengths, Rows::Window { relative: true }] {
            let narrow = canonical(Spec {
                io: Io {
                    rows: rows_form,
                    ..Io::DEFAULT
                },
                ..base::<T>()
            });
            let widened = Spec {
                dtype: Dtype::F32,
                digits: Digits::default_for(Dtype::F32, 11),
                ..narrow
            };
            let a: Output<T> = run(&narrow, &full(&data), &inputs.io(&narrow), false);
            let b: Output<f32> = run(&widened, &full(&wide), &inputs.io(&widened), false);
            assert_eq!(a.indices, b.indices, "{} {family:?}", T::DTYPE);
            let a_values: Vec<u32> = a
                .values
                .unwrap()
                .iter()
                .map(|x| x.to_f32().to_bits())
                .collect();
            let b_values: Vec<u32> = b.values.unwrap().iter().map(|x| x.to_bits()).collect();
            assert_eq!(a_values, b_values, "{} {family:?}", T::DTYPE);
        }
    }
}

#[test]
fn f16_and_bf16_select_what_their_fp32_widening_selects() {
    sixteen_bit_agrees_with_its_widening::<f16>(4);
    sixteen_bit_agrees_with_its_widening::<bf16>(5);
}

/// A window is selected as a row of its own: the same routes, and with lowest ties and sorted
/// order the same output, as the plain selector on the window cut out as a matrix.
#[test]
fn a_window_is_selected_like_the_row_it_cuts_out() {
    let mut rng = Rng::new(6);
    for family in FAMILIES {
        let data = matrix::<f32>(family, &mut rng);
        let inputs = inputs(&mut rng, &LENS, WIDTH, 1, false);
        for proposal in [base::<f32>().proposal, Proposal::Exact] {
            let spec = Spec {
                proposal,
                io: Io {
                    rows: Rows::Window { relative: true },
                    order: Order::Sorted,
                    ties: Ties::Lowest,
                    ..Io::DEFAULT
                },
                ..base::<f32>()
            };
            let scores = ScoreRows {
                data: &data,
                rows: LENS.len(),
                width: WIDTH,
                pitch: WIDTH,
            };
            let mut got = vec![0; LENS.len() * K];
            let io = inputs.io(&spec);
            let call = topk_runtime::call::CallOut::indices(&mut got, K);
            let routes = cpu::select_with(&spec, &scores, &io, call, true).unwrap();
            // The windows, cut out and padded to the width (with NaN, never read).
            let mut cut = vec![f32::NAN; LENS.len() * WIDTH];
            for (r, (&s, &e)) in inputs.starts.iter().zip(&inputs.ends).enumerate() {
                let (s, e) = (s as usize, e as usize);
                cut[r * WIDTH..][..e - s].copy_from_slice(&data[r * WIDTH + s..r * WIDTH + e]);
            }
            let lengths: Vec<i32> = LENS.iter().map(|&l| l as i32).collect();
            let m = ScoreMatrix {
                data: &cut,
                rows: LENS.len(),
                width: WIDTH,
                pitch: WIDTH,
                lengths: &lengths,
            };
            let mut want = vec![0; LENS.len() * K];
            let plain = Spec {
                io: Io {
                    rows: Rows::Lengths,
                    ..spec.io
                },
                ..spec
            };
            let plain_routes = cpu::select(&plain, &m, &mut want, K, true).unwrap();
            assert_eq!(got, want, "{family:?}, {spec}");
            assert_eq!(routes, plain_routes, "{family:?}, {spec}");
        }
    }
}

/// The plain interface through `select_with` is the plain selector, byte for byte, on every
/// route; and the plain selector honours `ties` and `order`.
#[test]
fn the_plain_interface_is_the_plain_selector() {
    let mut rng = Rng::new(7);
    let mut routes_seen = std::collections::BTreeSet::new();
    for family in FAMILIES {
        let data = matrix::<f32>(family, &mut rng);
        let lengths: Vec<i32> = LENS.iter().map(|&l| l as i32).collect();
        let m = ScoreMatrix {
            data: &data,
            rows: LENS.len(),
            width: WIDTH,
            pitch: WIDTH,
            lengths: &lengths,
        };
        for stride in [16, 64] {
            let mut spec = base::<f32>();
            spec.proposal = Proposal::Sampled {
                stride,
                rho: topk_dsl::Centi(150),
                rescue: Some(topk_dsl::Centi(175)),
                exact_below: 0,
            };
            for io in [Io::DEFAULT, canonical(spec).io] {
                let io = Io {
                    values: false,
                    ..io
                };
                let spec = Spec { io, ..spec };
                let mut plain = vec![0; LENS.len() * K];
                let stats = cpu::select(&spec, &m, &mut plain, K, true).unwrap();
                for route in [
                    Route::Primary,
                    Route::Rescue,
                    Route::Recovery,
                    Route::DirectExact,
                ] {
                    if stats.count(route) > 0 {
                        routes_seen.insert(route);
                    }
                }
                let mut with = vec![0; LENS.len() * K];
                let call = topk_runtime::call::CallOut::indices(&mut with, K);
                let io_in = CallIo::lengths(&lengths);
                let scores = ScoreRows::from(&m);
                let stats_with = cpu::select_with(&spec, &scores, &io_in, call, true).unwrap();
                assert_eq!(plain, with, "{family:?}, {spec}");
                assert_eq!(stats, stats_with, "{family:?}, {spec}");
                if spec.io.canonical_bytes() {
                    let want = run(&spec, &scores, &io_in, true);
                    assert_eq!(
                        plain, want.indices,
                        "{family:?}, {spec}: not the canonical bytes"
                    );
                }
            }
        }
    }
    assert!(routes_seen.contains(&Route::Primary), "{routes_seen:?}");
    assert!(routes_seen.contains(&Route::Recovery), "{routes_seen:?}");
}

/// The transforms write what their formulas say, -1 padding kept: checked by hand on one row.
#[test]
fn transforms_write_their_formulas_and_keep_the_padding() {
    // Row of 10 scores; window [4, 9) holds 5 scores, K = 8: 5 indices, then -1.
    let data: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let scores = ScoreRows {
        data: &data,
        rows: 1,
        width: 10,
        pitch: 10,
    };
    let (starts, ends) = ([4], [9]);
    let table = [10, 11, 12, 13];
    let cases: [(bool, Transform, [i32; 5]); 4] = [
        (true, Transform::None, [4, 3, 2, 1, 0]),
        (false, Transform::None, [8, 7, 6, 5, 4]),
        (true, Transform::Offset, [104, 103, 102, 101, 100]),
        // Absolute positions 8..4 through pages of 3: page p -> 10 + p.
        (false, Transform::Paged, [38, 37, 36, 35, 34]),
    ];
    for (relative, transform, expected) in cases {
        let spec = Spec {
            k: 8,
            io: Io {
                rows: Rows::Window { relative },
                transform,
                order: Order::Sorted,
                values: true,
                ..Io::DEFAULT
            },
            ..Spec::default()
        };
        let io = CallIo {
            rows: topk_runtime::call::RowSource::Window {
                starts: &starts,
                ends: &ends,
            },
            transform: match transform {
                Transform::None => topk_runtime::call::IndexTransform::None,
                Transform::Offset => topk_runtime::call::IndexTransform::Offset(&[100]),
                Transform::Paged => {
                    topk_runtime::call::IndexTransform::Paged(topk_runtime::call::PageTable {
                        data: &table,
                        columns: 4,
                        pitch: 4,
                        page_size: 3,
                    })
                }
                // Row 0 reads table row 0 through the map: the same indices as `paged`.
                Transform::PagedRows => topk_runtime::call::IndexTransform::PagedRows {
                    table: topk_runtime::call::PageTable {
                        data: &table,
                        columns: 4,
                        pitch: 4,
                        page_size: 3,
                    },
                    rows: &[0],
                },
            },
            prior: None,
        };
        let out = run(&spec, &scores, &io, false);
        assert_eq!(&out.indices[..5], &expected, "{spec}");
        assert_eq!(&out.indices[5..], &[-1, -1, -1], "{spec}");
        let values = out.values.unwrap();
        assert_eq!(&values[..5], &[8.0, 7.0, 6.0, 5.0, 4.0]);
        assert!(values[5..].iter().all(|&v| v == f32::NEG_INFINITY));
    }
}

/// High scores exactly on the view's positions make the sample overshoot: the rows underfill
/// and recover, on every dtype, still exact and canonical.
fn stride_aligned_rows_recover<T: TestScore>(seed: u64) {
    let mut rng = Rng::new(seed);
    let spec = canonical(base::<T>());
    let stride = 16;
    let mut data = Vec::new();
    for r in 0..LENS.len() {
        let phase = spec.view_phase(r as u64).unwrap() as usize;
        data.extend((0..WIDTH).map(|i| match i % stride == phase {
            true => T::from_f32(10.0 + rng.unit()),
            false => T::from_f32(rng.unit()),
        }));
    }
    let scores = full(&data);
    let lengths: Vec<i32> = LENS.iter().map(|&l| l as i32).collect();
    let io = CallIo::lengths(&lengths);
    let mut out = vec![0; LENS.len() * K];
    let call = topk_runtime::call::CallOut::indices(&mut out, K);
    let plain = Spec {
        io: Io {
            values: false,
            ..spec.io
        },
        ..spec
    };
    let stats = cpu::select_with(&plain, &scores, &io, call, true).unwrap();
    assert!(stats.count(Route::Recovery) > 0, "{}: {stats:?}", T::DTYPE);
    check_call(&spec, &scores, &io, "stride-aligned high scores");
}

#[test]
fn stride_aligned_rows_recover_exactly_on_every_dtype() {
    stride_aligned_rows_recover::<f32>(8);
    stride_aligned_rows_recover::<f16>(9);
    stride_aligned_rows_recover::<bf16>(10);
}

/// A page table read through a row map (`transform=paged(rows)`, FlashInfer's `row_to_batch`)
/// writes what the same call writes through the table expanded to one row per score row, and a
/// map that names a row the table does not hold, or holds the wrong count, is refused before
/// anything is read.
#[test]
fn a_row_map_reads_the_table_rows_it_names() {
    use topk_runtime::call::{CallOut, IndexTransform, PageTable, RowSource};
    let (rows, width, k) = (6usize, 300usize, 16usize);
    let mut rng = Rng::new(41);
    let data: Vec<f32> = (0..rows)
        .flat_map(|_| row::<f32>(FAMILIES[1], &mut rng, width, k))
        .collect();
    let scores = topk_runtime::ScoreRows {
        data: &data,
        rows,
        width,
        pitch: width,
    };
    let lengths: Vec<i32> = vec![300, 200, 16, 10, 0, 299];
    let (columns, page_size) = (5usize, 64u32);
    // Two requests' tables; rows 0-2 belong to the second, rows 3-5 to the first.
    let table: Vec<i32> = vec![9, 3, 7, 1, 5, 20, 24, 22, 21, 23];
    let map = [1i32, 1, 1, 0, 0, 0];
    let expanded: Vec<i32> = map
        .iter()
        .flat_map(|&t| table[t as usize * columns..][..columns].to_vec())
        .collect();
    let spec = |transform| Spec {
        k: k as u32,
        io: Io {
            transform,
            order: Order::Sorted,
            ties: Ties::Lowest,
            values: true,
            ..Io::DEFAULT
        },
        ..Spec::default()
    };
    let paged = |data| PageTable {
        data,
        columns,
        pitch: columns,
        page_size,
    };
    let through_map = CallIo {
        rows: RowSource::Lengths(&lengths),
        transform: IndexTransform::PagedRows {
            table: paged(&table),
            rows: &map,
        },
        prior: None,
    };
    let direct = CallIo {
        transform: IndexTransform::Paged(paged(&expanded)),
        ..through_map
    };
    let a = run(&spec(Transform::PagedRows), &scores, &through_map, false);
    let b = run(&spec(Transform::Paged), &scores, &direct, false);
    assert_eq!(a.indices, b.indices);
    assert_eq!(a.values, b.values);
    // Row 0's first index lands on one of the second request's pages.
    let first_page = a.indices[0] / page_size as i32;
    assert!(table[columns..].contains(&first_page), "{first_page}");
    // A map entry beyond the table, or a map of the wrong length: refused, naming the row.
    let mut out = vec![0i32; rows * k];
    let mut vals = vec![0f32; rows * k];
    let refuse = |map: &[i32], out: &mut [i32], vals: &mut [f32]| {
        let io = CallIo {
            transform: IndexTransform::PagedRows {
                table: paged(&table),
                rows: map,
            },
            ..through_map
        };
        let call = CallOut {
            indices: out,
            pitch: k,
            values: Some(vals),
            boundary: None,
        };
        cpu::select_with(&spec(Transform::PagedRows), &scores, &io, call, false)
            .unwrap_err()
            .to_string()
    };
    let e = refuse(&[1, 1, 2, 0, 0, 0], &mut out, &mut vals);
    assert!(
        e.contains("row 2") && e.contains("table row 2") && e.contains("holds 2 rows"),
        "{e}"
    );
    let e = refuse(&[1, 1], &mut out, &mut vals);
    assert!(e.contains("2 entries for 6 rows"), "{e}");
}

//! The host side of the `interface-cost` program: the variants and their specs, the call
//! arrays each one needs, and the output check on outputs made by the CPU backend.

use topk_bench::interface_cost::{
    check_output, median, CallArrays, Output, Variant, PAGE_SIZE, SHIFTED_START,
};
use topk_dsl::{Io, Order, Rows, Spec, Ties, Transform};
use topk_runtime::call::CallOut;
use topk_runtime::cpu::select_with;
use topk_runtime::data::shapes::causal_window;
use topk_runtime::data::{generate, Profile};
use topk_runtime::ScoreRows;

const K: usize = 64;

fn plain_spec() -> Spec {
    Spec::parse(&format!("k={K}")).unwrap()
}

#[test]
fn variants_parse_by_name_and_list() {
    for v in Variant::ALL {
        assert_eq!(Variant::parse(v.name()), Ok(v));
    }
    assert_eq!(Variant::parse_list("all").unwrap(), Variant::ALL.to_vec());
    assert_eq!(
        Variant::parse_list("paged, sorted-lowest").unwrap(),
        vec![Variant::Paged, Variant::SortedLowest]
    );
    let err = Variant::parse_list("values,valus").unwrap_err();
    assert!(err.contains("`valus`") && err.contains("sglang"), "{err}");
}

#[test]
fn each_variant_changes_only_the_interface_and_runs_on_the_gpu() {
    let plain = plain_spec();
    let mut seen = Vec::new();
    for v in Variant::ALL {
        let spec = v.spec(plain);
        assert!(!spec.io.is_default(), "{}", v.name());
        assert_eq!(
            Spec {
                io: Io::DEFAULT,
                ..spec
            },
            plain,
            "{}",
            v.name()
        );
        assert_eq!(spec.gpu_unsupported(), None, "{}", v.name());
        assert_eq!(Spec::parse(&spec.to_string()).unwrap(), spec);
        seen.push(spec.io);
    }
    // Window and window-shifted share an interface (they differ in their arrays); the
    // rest are distinct.
    seen.dedup();
    assert_eq!(seen.len(), Variant::ALL.len() - 1);
    let sg = Variant::SglangLike.io();
    assert!(sg.values && sg.transform == Transform::Paged);
    let sl = Variant::SortedLowest.io();
    assert!(sl.order == Order::Sorted && sl.ties == Ties::Lowest);
}

#[test]
fn call_arrays_hold_what_each_variant_reads() {
    let lengths = [0, 2, 100, 4096];
    let width = 4096;
    assert_eq!(
        CallArrays::of(Variant::Sorted, &lengths, width),
        CallArrays::default()
    );
    let w = CallArrays::of(Variant::Window, &lengths, width);
    assert_eq!(w.starts, vec![0; 4]);
    assert_eq!(w.ends, lengths.to_vec());
    let s = CallArrays::of(Variant::WindowShifted, &lengths, width);
    assert_eq!(s.starts, vec![0, 2, SHIFTED_START, SHIFTED_START]);
    assert!(s.starts.iter().zip(&s.ends).all(|(a, b)| a <= b));
    let o = CallArrays::of(Variant::Offset, &lengths, width);
    assert_eq!(o.offsets, vec![0, 1, 2, 3]);
    assert!(o.starts.is_empty() && o.page_table.is_empty());
    for v in [Variant::Paged, Variant::SglangLike] {
        let p = CallArrays::of(v, &lengths, 4100);
        let columns = 4100usize.div_ceil(PAGE_SIZE as usize);
        assert_eq!(p.page_columns, columns);
        assert_eq!(p.page_table.len(), lengths.len() * columns);
        for (r, row) in p.page_table.chunks(columns).enumerate() {
            // A permutation of the row's pages: invertible, every index inside the width's pages.
            let mut sorted = row.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..columns as i32).collect::<Vec<_>>(), "row {r}");
            assert_eq!(row[0], (r % columns) as i32);
        }
    }
}

/// A small causal-window matrix of the indexer profile, row 0 all ties.
fn matrix() -> (Vec<f32>, Vec<i32>, usize) {
    let (rows, width) = (6, 4096);
    let lengths = causal_window(rows, width);
    let mut data = generate(Profile::Indexer, 7, K as u32, 0, &lengths, width, width).unwrap();
    data[..lengths[0] as usize].fill(0.5);
    (data, lengths, width)
}

/// The CPU backend's output of `variant`'s call (indices, values when the variant has them).
fn select(
    variant: Variant,
    scores: &ScoreRows<f32>,
    lengths: &[i32],
    arrays: &CallArrays,
) -> (Vec<i32>, Option<Vec<f32>>) {
    let spec = variant.spec(plain_spec());
    let mut indices = vec![0; scores.rows * K];
    let mut values = spec.io.values.then(|| vec![0f32; scores.rows * K]);
    let out = CallOut {
        indices: &mut indices,
        pitch: K,
        values: values.as_deref_mut(),
        boundary: None,
    };
    select_with(&spec, scores, &arrays.call_io(variant, lengths), out, false).unwrap();
    (indices, values)
}

#[test]
fn check_output_accepts_the_cpu_backends_output_and_refuses_a_wrong_one() {
    let (data, lengths, width) = matrix();
    let scores = ScoreRows {
        data: &data,
        rows: lengths.len(),
        width,
        pitch: width,
    };
    for v in Variant::ALL {
        let spec = v.spec(plain_spec());
        let arrays = CallArrays::of(v, &lengths, width);
        let (indices, values) = select(v, &scores, &lengths, &arrays);
        let out = |indices: &[i32], values: Option<&[f32]>| {
            check_output(
                &spec,
                v,
                &scores,
                &lengths,
                &arrays,
                Output {
                    indices,
                    values,
                    pitch: K,
                },
            )
        };
        assert_eq!(out(&indices, values.as_deref()), Ok(()), "{}", v.name());

        // A repeated index in the last row.
        let mut dup = indices.clone();
        let last = (lengths.len() - 1) * K;
        dup[last + 1] = dup[last];
        let err = out(&dup, values.as_deref()).unwrap_err();
        assert!(err.starts_with(v.name()) && err.contains("row 5"), "{err}");

        // A changed value, bit for bit.
        if let Some(values) = &values {
            let mut bad = values.clone();
            bad[last + 3] = f32::from_bits(bad[last + 3].to_bits() ^ 1);
            assert!(out(&indices, Some(&bad)).is_err(), "{}", v.name());
        }

        // Rows out of order.
        if spec.io.order == Order::Sorted {
            let mut swapped = indices.clone();
            let mut vals = values.clone();
            let (a, b) = (last, last + K - 1);
            swapped.swap(a, b);
            if let Some(v) = vals.as_mut() {
                v.swap(a, b);
            }
            assert!(out(&swapped, vals.as_deref()).is_err(), "{}", v.name());
        }
    }
}

#[test]
fn check_output_holds_lowest_ties_to_the_lowest_positions() {
    let (data, lengths, width) = matrix();
    let scores = ScoreRows {
        data: &data,
        rows: lengths.len(),
        width,
        pitch: width,
    };
    // Row 0 is all ties: positions K..2K are a valid plain answer but not the lowest ones.
    let v = Variant::Lowest;
    let arrays = CallArrays::of(v, &lengths, width);
    let (mut indices, _) = select(v, &scores, &lengths, &arrays);
    let mut row0: Vec<i32> = indices[..K].to_vec();
    row0.sort_unstable();
    assert_eq!(row0, (0..K as i32).collect::<Vec<_>>());
    for (j, slot) in indices[..K].iter_mut().enumerate() {
        *slot = (K + j) as i32;
    }
    let spec = v.spec(plain_spec());
    let out = Output {
        indices: &indices,
        values: None,
        pitch: K,
    };
    assert!(check_output(&spec, v, &scores, &lengths, &arrays, out).is_err());
    let plain = plain_spec();
    let rows = topk_runtime::call::CallIo::lengths(&lengths);
    let report = topk_runtime::cpu::verify_with(&plain, &scores, &rows, &indices, K, None).unwrap();
    assert!(report.is_exact(), "the same output is a valid plain answer");
    assert_eq!(Variant::Window.io().rows, Rows::Window { relative: true });
}

#[test]
fn median_takes_the_middle_round() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 3.0);
    assert!(median(&[]).is_nan());
}

/// The kernels `interface-cost` plans on an H200 with its default shapes and K (the default map
/// on the H200's facts, plain and with every variant), compiled for sm_90a through the disk
/// cache of `TOPK_CACHE_DIR` on a machine without a GPU, so that a GPU host given that cache
/// loads them instead of compiling each one.
#[test]
#[ignore = "build machine: fills TOPK_CACHE_DIR for a GPU host"]
fn warm_the_kernel_cache_for_sm90a() {
    use topk_bench::interface_cost::DEFAULT_SHAPES;
    use topk_runtime::cuda::cache::{CacheSettings, CompileRequest, DiskCache};
    use topk_runtime::policy::{default_spec, DeviceFacts};
    let arch: topk_runtime::cuda::Arch = "sm_90a".parse().expect("sm_90a");
    let disk = DiskCache::new(CacheSettings::from_env());
    assert!(disk.settings().dir.is_some(), "set TOPK_CACHE_DIR");
    for (rows, width) in topk_bench::shapes::parse_list(DEFAULT_SHAPES).unwrap() {
        let plain = default_spec(&DeviceFacts::h200(), 2048, rows as u32, width as u32);
        let specs = std::iter::once(plain).chain(Variant::ALL.iter().map(|v| v.spec(plain)));
        for spec in specs {
            let kernel = topk_codegen::generate(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            let request = CompileRequest::new(&kernel.source, &kernel.entry, arch)
                .unwrap_or_else(|e| panic!("{spec}: {e}"));
            let fetched = disk
                .fetch_or_compile(&request, |r| r.compile())
                .unwrap_or_else(|e| panic!("{spec}: {e}"));
            println!("{:?} {spec}", fetched.outcome);
        }
    }
}

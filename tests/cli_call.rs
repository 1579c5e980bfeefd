//! `topk select` and `topk verify` with the call interface flags: float16 and bfloat16 score
//! files, --values-out / --values, --sorted, --deterministic, --starts/--ends with and without
//! --relative-to-start, --seq-lens/--next-n, --offsets, --page-table/--page-size; the CPU
//! fallback and its message; verify catching wrong values, order, ties and transforms; and the
//! refusals, each one clear line, exit 2, no output.

mod cli_support;

use cli_support::{files_in, s, topk, Run};
use half::{bf16, f16};
use std::path::{Path, PathBuf};
use topk::io::{npy, read_indices, safetensors};

/// Row r (of 4, width 12) holds r + a permutation of scores with ties: 5.0 at 3, 7 and 11,
/// 9.0 at 5, -0.0 at 0, and 0.25 * j elsewhere.
fn scores() -> Vec<f32> {
    (0..4)
        .flat_map(|r| {
            (0..12).map(move |j| match j {
                3 | 7 | 11 => 5.0,
                5 => 9.0,
                0 => -0.0,
                j => 0.25 * j as f32 + r as f32 * 0.0,
            })
        })
        .collect()
}

fn write<T: topk::io::Element>(dir: &Path, name: &str, shape: &[usize], data: &[T]) -> PathBuf {
    let path = dir.join(name);
    npy::write(&path, shape, data).unwrap();
    path
}

fn indices(path: &Path) -> Vec<i32> {
    read_indices(path, None).unwrap().data
}

fn run(args: &[&str]) -> Run {
    topk(args)
}

#[test]
fn windows_sorted_deterministic_values_and_offsets_give_the_documented_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sc = write(d, "s.npy", &[4, 12], &scores());
    let starts = write(d, "ks.npy", &[4], &[0i32, 2, 6, 12]);
    let ends = write(d, "ke.npy", &[4], &[12i32, 12, 12, 12]);
    let offsets = write(d, "off.npy", &[4], &[100i64, 200, 300, 400]);
    let (out, vals) = (d.join("i.npy"), d.join("v.npy"));
    let base = [
        "select",
        "--scores",
        s(&sc),
        "--starts",
        s(&starts),
        "--ends",
        s(&ends),
        "--k",
        "3",
        "--out",
        s(&out),
        "--values-out",
        s(&vals),
        "--sorted",
        "--deterministic",
    ];
    let r = run(&base);
    r.assert_success();
    // The kernels generate this call: `auto` takes a usable GPU, else the CPU with the reason.
    assert!(
        r.stderr.contains("backend: cuda") || r.stderr.contains("backend: cpu ("),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("(f32) on cpu") || r.stdout.contains("(f32) on cuda"),
        "{}",
        r.stdout
    );
    // Absolute positions: 9.0 at 5, then the lowest of the 5.0 ties.
    assert_eq!(indices(&out), vec![5, 3, 7, 5, 3, 7, 7, 11, 10, -1, -1, -1]);
    let values = npy_f32(&vals);
    assert_eq!(&values[..3], &[9.0, 5.0, 5.0]);
    assert_eq!(&values[6..9], &[5.0, 5.0, 2.5]);
    assert!(values[9..].iter().all(|&v| v == f32::NEG_INFINITY));
    // Relative to the window's start, then plus the row's offset.
    let mut rel = base.to_vec();
    rel.extend(["--relative-to-start", "--offsets", s(&offsets)]);
    run(&rel).assert_success();
    assert_eq!(
        indices(&out),
        vec![105, 103, 107, 203, 201, 205, 301, 305, 304, -1, -1, -1]
    );
    // The same call again: the same bytes.
    let first = std::fs::read(&out).unwrap();
    run(&rel).assert_success();
    assert_eq!(std::fs::read(&out).unwrap(), first);
    // verify accepts it with the same flags and catches a wrong offset.
    let verify = verify_args(&sc, &out, &vals, &rel);
    let ok = run(&verify.iter().map(String::as_str).collect::<Vec<_>>());
    ok.assert_success();
    assert!(ok.stdout.starts_with("exact: all 4 rows"), "{}", ok.stdout);
    let other = write(d, "off2.npy", &[4], &[100i32, 201, 300, 400]);
    let bad: Vec<String> = verify
        .iter()
        .map(|a| {
            if a == s(&offsets) {
                s(&other).to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    let r = run(&bad.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains("row 1"), "{}", r.stdout);
}

/// `verify` with the interface flags of a `select` invocation `sel` (its --out and
/// --values-out become --indices and --values).
fn verify_args(sc: &Path, out: &Path, vals: &Path, sel: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec!["verify".into(), "--indices".into(), s(out).into()];
    let mut skip = false;
    for (i, a) in sel.iter().enumerate().skip(1) {
        if skip {
            skip = false;
            continue;
        }
        match *a {
            "--out" | "--backend" => skip = true,
            "--values-out" => {
                args.extend(["--values".into(), s(vals).into()]);
                skip = true;
            }
            "--scores" => {
                args.extend(["--scores".into(), s(sc).into()]);
                skip = true;
            }
            _ => args.push(sel[i].to_string()),
        }
    }
    args
}

fn npy_f32(path: &Path) -> Vec<f32> {
    topk::io::ArrayFile::open(path, None, None)
        .unwrap()
        .read::<f32>(&mut |_, _| {})
        .unwrap()
        .data
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn f16_and_bf16_files_select_in_their_dtype_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let wide = scores();
    let halves: Vec<f16> = wide.iter().map(|&x| f16::from_f32(x)).collect();
    let brains: Vec<bf16> = wide.iter().map(|&x| bf16::from_f32(x)).collect();
    let f16_npy = write(d, "h.npy", &[4, 12], &halves);
    let bf16_st = d.join("b.safetensors");
    safetensors::write(
        &bf16_st,
        &[safetensors::NamedTensor {
            name: "scores",
            shape: &[4, 12],
            data: &brains,
        }],
    )
    .unwrap();
    // bfloat16 bits in a uint16 .npy: only with --spec dtype=bf16.
    let bits: Vec<u16> = brains.iter().map(|b| b.to_bits()).collect();
    let bf16_npy = write(d, "bits.npy", &[4, 12], &bits);
    let out = d.join("i.npy");
    let vals = d.join("v.npy");
    let select = |scores: &Path, extra: &[&str]| {
        let mut args = vec![
            "select",
            "--scores",
            s(scores),
            "--k",
            "4",
            "--out",
            s(&out),
            "--values-out",
            s(&vals),
            "--sorted",
            "--deterministic",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let mut outputs = Vec::new();
    for (scores, extra, dtype) in [
        (&f16_npy, &[][..], "f16"),
        (&bf16_st, &[][..], "bf16"),
        (&bf16_npy, &["--spec", "dtype=bf16"][..], "bf16"),
    ] {
        let r = select(scores, extra);
        r.assert_success();
        // `auto` takes a usable GPU, else the CPU.
        assert!(
            r.stdout.contains(&format!("({dtype}) on cpu"))
                || r.stdout.contains(&format!("({dtype}) on cuda")),
            "{}",
            r.stdout
        );
        outputs.push(indices(&out));
        // The values file is the scores' dtype: float16 .npy, bfloat16 as uint16 bits.
        let file = topk::io::ArrayFile::open(&vals, None, None).unwrap();
        let expected = if dtype == "f16" { "float16" } else { "uint16" };
        assert_eq!(file.element_type().unwrap().numpy_name(), expected);
        let mut verify = vec![
            "verify",
            "--scores",
            s(scores),
            "--indices",
            s(&out),
            "--values",
            s(&vals),
            "--k",
            "4",
            "--sorted",
            "--deterministic",
        ];
        verify.extend_from_slice(extra);
        let v = run(&verify);
        v.assert_success();
        assert!(v.stdout.starts_with("exact: all 4 rows"), "{}", v.stdout);
    }
    // The same numbers in any dtype: the same canonical indices.
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[1], outputs[2]);
    // 16-bit digits in --spec apply to the file's 16-bit dtype.
    select(&f16_npy, &["--spec", "digits=8+8"]).assert_success();
    assert_eq!(indices(&out), outputs[0]);
    select(&bf16_npy, &[]).assert_bad_input(&["uint16", "--spec dtype=bf16"]);
    select(&f16_npy, &["--spec", "dtype=bf16"]).assert_bad_input(&["dtype=bf16", "float16"]);
}

#[test]
fn a_bf16_values_file_as_safetensors_keeps_its_dtype() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let brains: Vec<bf16> = scores().iter().map(|&x| bf16::from_f32(x)).collect();
    let bf16_st = d.join("b.safetensors");
    safetensors::write(
        &bf16_st,
        &[safetensors::NamedTensor {
            name: "scores",
            shape: &[4, 12],
            data: &brains,
        }],
    )
    .unwrap();
    let (out, st_vals) = (d.join("i.npy"), d.join("v.safetensors"));
    run(&[
        "select",
        "--scores",
        s(&bf16_st),
        "--k",
        "4",
        "--out",
        s(&out),
        "--values-out",
        s(&st_vals),
    ])
    .assert_success();
    let file = topk::io::ArrayFile::open(&st_vals, None, None).unwrap();
    assert_eq!(file.element_type().unwrap().numpy_name(), "bfloat16");
    let values = file.read::<bf16>(&mut |_, _| {}).unwrap().data;
    let picked = indices(&out);
    for (j, (&i, v)) in picked.iter().zip(&values).enumerate() {
        assert_eq!(*v, brains[(j / 4) * 12 + i as usize], "slot {j}");
    }
}

#[test]
fn decode_rows_and_page_tables_follow_their_formulas() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sc = write(d, "s.npy", &[4, 12], &scores());
    // Two sequences of 12 and 9 tokens, 2 rows each: lengths 11, 12, 8, 9.
    let seq = write(d, "seq.npy", &[2], &[12i32, 9]);
    // Page size 5 (not a power of two), one table for all rows: pages 0, 1, 2 -> 7, 3, 10.
    let table = write(d, "pt.npy", &[1, 3], &[7i64, 3, 10]);
    let out = d.join("slots.npy");
    let args = [
        "select",
        "--scores",
        s(&sc),
        "--seq-lens",
        s(&seq),
        "--next-n",
        "2",
        "--page-table",
        s(&table),
        "--page-size",
        "5",
        "--k",
        "2",
        "--out",
        s(&out),
        "--deterministic",
        "--sorted",
        "--backend",
        "cpu",
    ];
    let r = run(&args);
    r.assert_success();
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    // Positions 5 (9.0) and 3 (5.0) on every row: 5 -> page 1, 3 -> page 0.
    assert_eq!(indices(&out), vec![15, 38, 15, 38, 15, 38, 15, 38]);
    let verify = verify_args(&sc, &out, &out, &args);
    run(&strs(&verify)).assert_success();
    // Positions checked as slots of another table: no position writes them.
    let other = write(d, "pt2.npy", &[1, 3], &[7i32, 4, 10]);
    let bad: Vec<String> = verify
        .iter()
        .map(|a| {
            if a == s(&table) {
                s(&other).to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    let r = run(&strs(&bad));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout.contains("no position of the row's window"),
        "{}",
        r.stdout
    );
}

#[test]
fn verify_catches_wrong_values_order_and_ties() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sc = write(d, "s.npy", &[4, 12], &scores());
    let flags = ["--k", "3", "--sorted", "--deterministic"];
    let check = |idx: &[i32], vals: Option<&[f32]>, words: &str| {
        let out = write(d, "i.npy", &[4, 3], idx);
        let mut args = vec!["verify", "--scores", s(&sc), "--indices", s(&out)];
        args.extend_from_slice(&flags);
        let v;
        if let Some(vals) = vals {
            v = write(d, "v.npy", &[4, 3], vals);
            args.extend(["--values", s(&v)]);
        }
        let r = run(&args);
        assert_eq!(r.code, 1, "{words}: {} {}", r.stdout, r.stderr);
        assert!(r.stdout.contains(words), "{words}: {}", r.stdout);
    };
    let good = [5, 3, 7, 5, 3, 7, 5, 3, 7, 5, 3, 7];
    let good_values = [9.0, 5.0, 5.0].repeat(4);
    let mut wrong_value = good_values.clone();
    wrong_value[4] = 4.0;
    check(&good, Some(&wrong_value), "value 4.0");
    check(&[3, 5, 7, 5, 3, 7, 5, 3, 7, 5, 3, 7], None, "out of order");
    check(&[5, 3, 11, 5, 3, 7, 5, 3, 7, 5, 3, 7], None, "ties=lowest");
}

#[test]
fn interface_flags_are_refused_where_they_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sc = write(d, "s.npy", &[4, 12], &scores());
    let out = d.join("out.npy");
    let before = files_in(d);
    let refuse = |extra: &[&str], needles: &[&str]| {
        let mut args = vec!["select", "--scores", s(&sc), "--k", "3", "--out", s(&out)];
        args.extend_from_slice(extra);
        run(&args).assert_bad_input(needles);
        assert_eq!(files_in(d), before, "{extra:?} left a file behind");
    };
    // A 16-bit call on cuda (its own folder, so the other refusals' folder keeps its files).
    let dir16 = tempfile::tempdir().unwrap();
    let halves: Vec<f16> = scores().iter().map(|&x| f16::from_f32(x)).collect();
    let sc16 = write(dir16.path(), "h.npy", &[4, 12], &halves);
    let out16 = dir16.path().join("out.npy");
    let mut args = vec![
        "select",
        "--scores",
        s(&sc16),
        "--k",
        "3",
        "--out",
        s(&out16),
    ];
    args.extend(["--sorted", "--backend", "cuda"]);
    cuda_runs_or_is_missing(&run(&args), &out16);
    refuse(
        &["--spec", "ties=lowest"],
        &["--spec names `ties`", "--deterministic"],
    );
    refuse(
        &["--spec", "dtype=f16"],
        &["--spec says dtype=f16", "float32"],
    );
    refuse(
        &["--sorted", "--ranks", "2"],
        &["--ranks selects with --lengths only"],
    );
    let missing = d.join("no/such/v.npy");
    refuse(
        &["--values-out", s(&missing)],
        &["--values-out", "does not exist"],
    );
    let short = write(d, "short.npy", &[3], &[1i32, 2, 3]);
    let before = files_in(d);
    let mut args = vec!["select", "--scores", s(&sc), "--k", "3", "--out", s(&out)];
    args.extend(["--offsets", s(&short)]);
    run(&args).assert_bad_input(&["--offsets", "holds 3 values but 4 are needed"]);
    assert_eq!(files_in(d), before);
    // Flags that need a partner are usage errors from the parser (exit 2).
    for extra in [
        &["--relative-to-start"][..],
        &["--page-size", "4"],
        &["--next-n", "2"],
    ] {
        let mut args = vec!["select", "--scores", s(&sc), "--k", "3", "--out", s(&out)];
        args.extend_from_slice(extra);
        let r = run(&args);
        assert_eq!(r.code, 2, "{extra:?}: {}", r.stderr);
    }
}

/// A decode step's boundary as the next step's prior: `--boundary-out` writes each row's K-th
/// largest score (NaN for a row of L <= K), `--prior` takes it (the output is the same either
/// way; the routes say the prior certified), `verify --boundary` checks one, and bad prior
/// files are refused with nothing written.
#[test]
fn the_boundary_of_one_step_is_the_prior_of_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (rows, width) = (4usize, 3000usize);
    let data: Vec<f32> = (0..rows * width)
        .map(|i| ((i * 7919) % 10007) as f32 * 0.01)
        .collect();
    let sc = write(d, "s.npy", &[rows, width], &data);
    let lengths = write(d, "l.npy", &[rows], &[3000i32, 2500, 40, 1000]);
    let (first, bound) = (d.join("i1.npy"), d.join("b1.npy"));
    let select = |extra: &[&str]| {
        let mut args = vec![
            "select",
            "--scores",
            s(&sc),
            "--lengths",
            s(&lengths),
            "--k",
            "64",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let r = select(&[
        "--out",
        s(&first),
        "--boundary-out",
        s(&bound),
        "--deterministic",
        "--sorted",
    ]);
    r.assert_success();
    assert!(
        r.stdout
            .contains(&format!("boundaries -> {}", bound.display())),
        "{}",
        r.stdout
    );
    let b = npy_f32(&bound);
    assert_eq!(b.len(), rows);
    assert!(
        b[2].is_nan(),
        "a row of 40 <= K scores has no boundary: {b:?}"
    );
    for r in [0usize, 1, 3] {
        let len = [3000usize, 2500, 40, 1000][r];
        let mut row = data[r * width..][..len].to_vec();
        row.sort_by(|a, b| b.total_cmp(a));
        assert_eq!(b[r], row[63], "row {r}: the 64th largest score");
    }
    let (second, bound2) = (d.join("i2.npy"), d.join("b2.npy"));
    let r = select(&[
        "--out",
        s(&second),
        "--prior",
        s(&bound),
        "--boundary-out",
        s(&bound2),
        "--deterministic",
        "--sorted",
    ]);
    r.assert_success();
    assert!(r.stdout.contains("prior-primary 3"), "{}", r.stdout);
    assert_eq!(indices(&first), indices(&second));
    let verify = |boundary: &Path| {
        run(&[
            "verify",
            "--scores",
            s(&sc),
            "--lengths",
            s(&lengths),
            "--k",
            "64",
            "--indices",
            s(&second),
            "--boundary",
            s(boundary),
            "--deterministic",
            "--sorted",
        ])
    };
    verify(&bound2).assert_success();
    let mut wrong = b.clone();
    wrong[1] += 0.5;
    let wrong = write(d, "wrong.npy", &[rows], &wrong);
    let r = verify(&wrong);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout.contains("row 1") && r.stdout.contains("K-th largest"),
        "{}",
        r.stdout
    );
    let out = d.join("never.npy");
    let short = write(d, "short.npy", &[2], &[1.0f32, 2.0]);
    let ints = write(d, "ints.npy", &[rows], &[1i32, 2, 3, 4]);
    let before = files_in(d);
    for (prior, needles) in [
        (&short, &["--prior", "2 values", "4 rows"][..]),
        (&ints, &["--prior", "int32", "float32"][..]),
    ] {
        select(&["--out", s(&out), "--prior", s(prior)]).assert_bad_input(needles);
        assert_eq!(files_in(d), before, "a refused prior left a file behind");
    }
    select(&[
        "--out",
        s(&out),
        "--prior",
        s(&bound),
        "--prior-bins",
        "9/2",
    ])
    .assert_bad_input(&["prior", "9/2"]);
    cuda_runs_or_is_missing(
        &select(&["--out", s(&out), "--prior", s(&bound), "--backend", "cuda"]),
        &out,
    );
}

/// A `--backend cuda` call either ran (a usable GPU is present) or says that CUDA is missing,
/// leaving no output behind.
fn cuda_runs_or_is_missing(r: &Run, out: &Path) {
    if r.code == 0 {
        return;
    }
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.starts_with("error: CUDA"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(!out.exists(), "a refused cuda call left its output behind");
}

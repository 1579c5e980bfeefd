//! `topk select` and `topk verify` end to end, and every kind of bad input they must refuse
//! with one clear line, exit code 2, and no output file.

mod cli_support;

use cli_support::{f32_bytes, files_in, raw_npy, s, topk, tricky_scores, write_problem};
use std::path::Path;

#[test]
fn select_then_verify_accepts_the_output_on_ragged_rows() {
    let dir = tempfile::tempdir().unwrap();
    // Rows shorter than, equal to, just above and far above K, and an empty row.
    let lengths = [0, 1, 15, 16, 17, 500, 999, 1000];
    let (scores, lens) = write_problem(dir.path(), lengths.len(), 1000, &lengths);
    let out = dir.path().join("idx.npy");
    let run = topk(&[
        "select",
        "--scores",
        s(&scores),
        "--lengths",
        s(&lens),
        "--k",
        "16",
        "--out",
        s(&out),
        "--backend",
        "cpu",
    ]);
    run.assert_success();
    assert!(
        run.stdout.contains("selected k=16 of 8 rows x 1000 on cpu"),
        "{}",
        run.stdout
    );
    let idx = topk::io::read_indices(&out, None).unwrap();
    assert_eq!((idx.rows, idx.k), (8, 16));
    // Short rows: every valid index, then -1.
    assert!(idx.data[..16].iter().all(|&i| i == -1));
    assert_eq!(idx.data[16], 0);
    assert!(idx.data[17..32].iter().all(|&i| i == -1));

    assert_verified_exact(&scores, &lens, &out, 16, 8);
}

#[test]
fn auto_backend_says_which_backend_it_chose() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, _) = write_problem(dir.path(), 3, 300, &[300, 300, 300]);
    let out = dir.path().join("idx.npy");
    let run = topk(&[
        "select",
        "--scores",
        s(&scores),
        "--k",
        "8",
        "--out",
        s(&out),
    ]);
    run.assert_success();
    assert!(run.stderr.starts_with("backend: "), "{}", run.stderr);
    assert!(out.exists());
}

#[test]
fn presets_and_spec_text_select_exactly_too() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, _) = write_problem(dir.path(), 4, 5000, &[5000; 4]);
    let out = dir.path().join("idx.npy");
    for policy in [
        &["--preset", "persistent-s64"][..],
        &["--preset", "persistent-exact"][..],
        &["--spec", "propose=exact"][..],
        &["--spec", "k=32"][..],
    ] {
        let mut args = vec![
            "select",
            "--scores",
            s(&scores),
            "--k",
            "32",
            "--out",
            s(&out),
        ];
        args.extend_from_slice(&["--backend", "cpu"]);
        args.extend_from_slice(policy);
        topk(&args).assert_success();
        topk(&[
            "verify",
            "--scores",
            s(&scores),
            "--indices",
            s(&out),
            "--k",
            "32",
        ])
        .assert_success();
    }
}

#[test]
fn verify_rejects_a_wrong_answer_with_exit_1_and_names_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, lens) = write_problem(dir.path(), 2, 100, &[100, 100]);
    let out = dir.path().join("idx.npy");
    topk(&[
        "select",
        "--scores",
        s(&scores),
        "--k",
        "4",
        "--out",
        s(&out),
        "--backend",
        "cpu",
    ])
    .assert_success();
    let mut idx = topk::io::read_indices(&out, None).unwrap();
    // Replace row 1's selection by the four smallest scores of that row.
    let row: Vec<f32> = tricky_scores(2, 100)[100..].to_vec();
    let mut order: Vec<usize> = (0..100).collect();
    order.sort_by(|&a, &b| row[a].total_cmp(&row[b]));
    for (slot, &i) in order[..4].iter().enumerate() {
        idx.data[4 + slot] = i as i32;
    }
    topk::io::npy::write(&out, &[2, 4], &idx.data).unwrap();
    let run = topk(&[
        "verify",
        "--scores",
        s(&scores),
        "--lengths",
        s(&lens),
        "--indices",
        s(&out),
        "--k",
        "4",
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("1 of 2 rows"), "{}", run.stdout);
    assert!(run.stdout.contains("row 1:"), "{}", run.stdout);
}

#[test]
fn verify_refuses_indices_of_another_shape() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, _) = write_problem(dir.path(), 2, 100, &[100, 100]);
    let idx = dir.path().join("idx.npy");
    topk::io::npy::write(&idx, &[3, 4], &[0i32; 12]).unwrap();
    topk(&[
        "verify",
        "--scores",
        s(&scores),
        "--indices",
        s(&idx),
        "--k",
        "4",
    ])
    .assert_bad_input(&["--indices", "3 rows", "2"]);
    topk::io::npy::write(&idx, &[2, 4], &[0i32; 8]).unwrap();
    topk(&[
        "verify",
        "--scores",
        s(&scores),
        "--indices",
        s(&idx),
        "--k",
        "5",
    ])
    .assert_bad_input(&["4 slots", "--k is 5"]);
}

/// `topk verify` accepts `out` as the exact top `k` of all `rows` rows.
fn assert_verified_exact(scores: &Path, lens: &Path, out: &Path, k: usize, rows: usize) {
    let k = k.to_string();
    let verify = topk(&[
        "verify",
        "--scores",
        s(scores),
        "--lengths",
        s(lens),
        "--indices",
        s(out),
        "--k",
        &k,
    ]);
    verify.assert_success();
    assert!(
        verify
            .stdout
            .starts_with(&format!("exact: all {rows} rows")),
        "{}",
        verify.stdout
    );
}

/// Run `select` into `dir/out.npy` and check it refused with `needles`, leaving no output.
fn refuses(dir: &Path, extra: &[&str], needles: &[&str]) {
    let out = dir.join("out.npy");
    let before = files_in(dir);
    let mut args = vec!["select", "--out", s(&out)];
    args.extend_from_slice(extra);
    let run = topk(&args);
    run.assert_bad_input(needles);
    assert!(!out.exists(), "output written despite {:?}", run.stderr);
    assert_eq!(files_in(dir), before, "files left behind");
}

#[test]
fn nan_scores_are_refused_with_their_position() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = tricky_scores(3, 50);
    data[2 * 50 + 7] = f32::NAN;
    let path = dir.path().join("nan.npy");
    topk::io::npy::write(&path, &[3, 50], &data).unwrap();
    refuses(
        dir.path(),
        &["--scores", s(&path), "--k", "4", "--backend", "cpu"],
        &["--scores", "nan.npy", "NaN", "row 2", "column 7"],
    );
    // NaN past a row's valid length is never read, so it is no error.
    let lens = dir.path().join("lens.npy");
    topk::io::npy::write(&lens, &[3], &[50, 50, 7]).unwrap();
    let out = dir.path().join("ok.npy");
    topk(&[
        "select",
        "--scores",
        s(&path),
        "--lengths",
        s(&lens),
        "--k",
        "4",
        "--out",
        s(&out),
        "--backend",
        "cpu",
    ])
    .assert_success();
}

#[test]
fn wrong_dtype_rank_and_layout_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.npy");
    let cases: [(&str, usize, &[&str]); 4] = [
        (
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 4), }",
            64,
            &["--scores", "float64", "float32"],
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }",
            32,
            &["--scores", "(8,)", "2-D"],
        ),
        (
            "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 4), }",
            32,
            &["Fortran", "ascontiguousarray"],
        ),
        (
            "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 4), }",
            32,
            &["big-endian"],
        ),
    ];
    for (dict, bytes, needles) in cases {
        raw_npy(&p, dict, &vec![0u8; bytes]);
        refuses(
            dir.path(),
            &["--scores", s(&p), "--k", "2", "--backend", "cpu"],
            needles,
        );
    }
}

#[test]
fn bad_lengths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, lens) = write_problem(dir.path(), 4, 64, &[64, 64, 64]);
    refuses(
        dir.path(),
        &[
            "--scores",
            s(&scores),
            "--lengths",
            s(&lens),
            "--k",
            "4",
            "--backend",
            "cpu",
        ],
        &["--lengths", "3 lengths", "4 rows"],
    );
    for (bad, needle) in [
        (65i64, "length 65"),
        (-1, "length -1"),
        (1 << 40, "outside [0, 64]"),
    ] {
        topk::io::npy::write(&lens, &[4], &[64i64, bad, 0, 1]).unwrap();
        refuses(
            dir.path(),
            &[
                "--scores",
                s(&scores),
                "--lengths",
                s(&lens),
                "--k",
                "4",
                "--backend",
                "cpu",
            ],
            &["row 1", needle],
        );
    }
    topk::io::npy::write(&lens, &[4], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    refuses(
        dir.path(),
        &["--scores", s(&scores), "--lengths", s(&lens), "--k", "4"],
        &["--lengths", "float32", "int32 or int64"],
    );
}

#[test]
fn k_out_of_range_is_refused_before_reading_anything() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.npy");
    for (k, needle) in [
        ("0", "at least 1"),
        ("16385", "at most 16384"),
        ("many", "not a whole number"),
    ] {
        let out = dir.path().join("out.npy");
        let run = topk(&[
            "select",
            "--scores",
            s(&missing),
            "--k",
            k,
            "--out",
            s(&out),
        ]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
        assert!(run.stderr.contains(needle), "{}", run.stderr);
        assert!(!out.exists());
    }
}

#[test]
fn missing_corrupt_and_truncated_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.npy");
    refuses(
        dir.path(),
        &["--scores", s(&missing), "--k", "4"],
        &["--scores", "missing.npy", "does not exist"],
    );

    let corrupt = dir.path().join("corrupt.npy");
    std::fs::write(
        &corrupt,
        b"\x93NUMPY\x01\x00\x20\x00{'descr': '<f4', 'fortr",
    )
    .unwrap();
    refuses(
        dir.path(),
        &["--scores", s(&corrupt), "--k", "4"],
        &["corrupt .npy header"],
    );

    let garbage = dir.path().join("garbage.npy");
    std::fs::write(&garbage, b"these bytes are not an array").unwrap();
    refuses(
        dir.path(),
        &["--scores", s(&garbage), "--k", "4"],
        &["corrupt .npy header"],
    );

    let truncated = dir.path().join("truncated.npy");
    raw_npy(
        &truncated,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 100), }",
        &f32_bytes(&[1.0; 250]),
    );
    refuses(
        dir.path(),
        &["--scores", s(&truncated), "--k", "4"],
        &["truncated", "1600", "1000"],
    );

    let (scores, _) = write_problem(dir.path(), 2, 10, &[10, 10]);
    let lens_missing = dir.path().join("nolens.npy");
    refuses(
        dir.path(),
        &[
            "--scores",
            s(&scores),
            "--lengths",
            s(&lens_missing),
            "--k",
            "4",
        ],
        &["--lengths", "nolens.npy"],
    );
}

#[test]
fn an_output_folder_that_does_not_exist_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, _) = write_problem(dir.path(), 2, 10, &[10, 10]);
    let out = dir.path().join("nope/out.npy");
    topk(&[
        "select",
        "--scores",
        s(&scores),
        "--k",
        "4",
        "--out",
        s(&out),
    ])
    .assert_bad_input(&["--out", "does not exist"]);
}

#[test]
fn safetensors_scores_are_selected_by_tensor_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.safetensors");
    let data = tricky_scores(3, 40);
    topk::io::safetensors::write(
        &path,
        &[
            topk::io::safetensors::NamedTensor {
                name: "a",
                shape: &[3, 40],
                data: &data,
            },
            topk::io::safetensors::NamedTensor {
                name: "b",
                shape: &[1, 40],
                data: &data[..40],
            },
        ],
    )
    .unwrap();
    let out = dir.path().join("i.npy");
    let run = topk(&[
        "select",
        "--scores",
        s(&path),
        "--tensor",
        "a",
        "--k",
        "5",
        "--out",
        s(&out),
        "--backend",
        "cpu",
    ]);
    run.assert_success();
    assert_eq!(topk::io::read_indices(&out, None).unwrap().rows, 3);
    refuses(
        dir.path(),
        &["--scores", s(&path), "--k", "5"],
        &["several tensors", "a, b", "--tensor"],
    );
    refuses(
        dir.path(),
        &["--scores", s(&path), "--tensor", "c", "--k", "5"],
        &["no tensor named `c`"],
    );
}

#[test]
fn conflicting_spec_and_k_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, _) = write_problem(dir.path(), 2, 10, &[10, 10]);
    refuses(
        dir.path(),
        &["--scores", s(&scores), "--k", "4", "--spec", "k=8"],
        &["k=8", "--k is 4"],
    );
    refuses(
        dir.path(),
        &["--scores", s(&scores), "--k", "4", "--preset", "no-such"],
        &["unknown preset", "topk spec --list"],
    );
}

#[test]
fn cuda_backend_without_a_gpu_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, _) = write_problem(dir.path(), 2, 10, &[10, 10]);
    let out = dir.path().join("out.npy");
    let run = topk(&[
        "select",
        "--scores",
        s(&scores),
        "--k",
        "4",
        "--out",
        s(&out),
        "--backend",
        "cuda",
    ]);
    if run.code == 0 {
        return; // a usable GPU is present: nothing to refuse
    }
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.starts_with("error: CUDA"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!out.exists());
}

#[test]
fn verify_refuses_nan_scores_instead_of_judging_them() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, _) = write_problem(dir.path(), 2, 30, &[30, 30]);
    let idx = dir.path().join("idx.npy");
    topk(&[
        "select",
        "--scores",
        s(&scores),
        "--k",
        "3",
        "--out",
        s(&idx),
        "--backend",
        "cpu",
    ])
    .assert_success();
    let mut data = tricky_scores(2, 30);
    data[31] = f32::NAN;
    topk::io::npy::write(&scores, &[2, 30], &data).unwrap();
    topk(&[
        "verify",
        "--scores",
        s(&scores),
        "--indices",
        s(&idx),
        "--k",
        "3",
    ])
    .assert_bad_input(&["--scores", "NaN", "row 1", "column 1"]);
}

#[test]
fn a_tensor_name_for_a_npy_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, _) = write_problem(dir.path(), 2, 10, &[10, 10]);
    refuses(
        dir.path(),
        &["--scores", s(&scores), "--tensor", "x", "--k", "4"],
        &["--scores", ".npy file", "drop the tensor name `x`"],
    );
}

#[test]
fn sharded_ranks_select_exactly_and_refuse_what_they_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    // Rows ending inside the first shard, on a shard boundary (250 of 1000 over 4 ranks), just
    // past it, and full.
    let lengths = [0, 17, 250, 251, 999, 1000];
    let (scores, lens) = write_problem(dir.path(), lengths.len(), 1000, &lengths);
    for ranks in ["1", "3", "4"] {
        let out = dir.path().join(format!("idx{ranks}.npy"));
        let run = topk(&[
            "select",
            "--scores",
            s(&scores),
            "--lengths",
            s(&lens),
            "--k",
            "16",
            "--out",
            s(&out),
            "--backend",
            "cpu",
            "--ranks",
            ranks,
        ]);
        run.assert_success();
        assert!(
            run.stdout.contains(&format!("as {ranks} ranks")),
            "{}",
            run.stdout
        );
        assert_verified_exact(&scores, &lens, &out, 16, 6);
    }
    let sc = s(&scores);
    refuses(
        dir.path(),
        &[
            "--scores",
            sc,
            "--k",
            "16",
            "--backend",
            "cuda",
            "--ranks",
            "2",
        ],
        &["--ranks", "CPU backend"],
    );
    refuses(
        dir.path(),
        &[
            "--scores",
            sc,
            "--k",
            "16",
            "--backend",
            "cpu",
            "--ranks",
            "0",
        ],
        &["--ranks 0", "at least one rank"],
    );
}

//! The array file layer under the CLI: round trips, and every way a file can be unusable.

mod cli_support;

use cli_support::{f32_bytes, files_in, raw_npy};
use topk::io::{self, npy, safetensors::NamedTensor, IoError};

fn no_progress() -> impl FnMut(u64, u64) {
    |_, _| {}
}

#[test]
fn npy_round_trip_keeps_every_bit_of_special_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.npy");
    let data = vec![
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        f32::from_bits(1),
        -f32::from_bits(0x007f_ffff),
        65504.0,
        1e-30,
        -1.5,
    ];
    npy::write(&path, &[3, 3], &data).unwrap();
    let back = io::read_scores(&path, None, &mut no_progress()).unwrap();
    assert_eq!((back.rows, back.width), (3, 3));
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&back.data), bits(&data));
    assert_eq!(files_in(dir.path()), vec!["s.npy"]);
}

#[test]
fn npy_round_trip_of_lengths_and_indices_in_both_integer_widths() {
    let dir = tempfile::tempdir().unwrap();
    let l32 = dir.path().join("l32.npy");
    let l64 = dir.path().join("l64.npy");
    npy::write(&l32, &[4], &[0i32, 1, i32::MAX, 7]).unwrap();
    npy::write(&l64, &[4], &[0i64, 1, i32::MAX as i64, 7]).unwrap();
    assert_eq!(
        io::read_lengths(&l32, None).unwrap(),
        vec![0, 1, i32::MAX as i64, 7]
    );
    assert_eq!(
        io::read_lengths(&l32, None).unwrap(),
        io::read_lengths(&l64, None).unwrap()
    );

    let idx = dir.path().join("i.npy");
    npy::write(&idx, &[2, 3], &[5i64, -1, -1, 0, 1, 2]).unwrap();
    let back = io::read_indices(&idx, None).unwrap();
    assert_eq!((back.rows, back.k), (2, 3));
    assert_eq!(back.data, vec![5, -1, -1, 0, 1, 2]);

    npy::write(&idx, &[1, 1], &[1i64 << 40]).unwrap();
    assert!(matches!(
        io::read_indices(&idx, None),
        Err(IoError::IndexRange { .. })
    ));
}

#[test]
fn empty_arrays_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.npy");
    npy::write::<f32>(&path, &[0, 5], &[]).unwrap();
    let back = io::read_scores(&path, None, &mut no_progress()).unwrap();
    assert_eq!((back.rows, back.width, back.data.len()), (0, 5, 0));
}

#[test]
fn version_2_headers_and_native_byte_order_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.npy");
    let dict = "{'descr': '=f4', 'fortran_order': False, 'shape': (1, 2), }\n";
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    bytes.extend_from_slice(dict.as_bytes());
    bytes.extend_from_slice(&f32_bytes(&[1.0, -2.0]));
    std::fs::write(&path, bytes).unwrap();
    let back = io::read_scores(&path, None, &mut no_progress()).unwrap();
    assert_eq!(back.data, vec![1.0, -2.0]);
}

#[test]
fn progress_reports_every_byte_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.npy");
    let data: Vec<f32> = (0..700_000).map(|i| i as f32).collect();
    npy::write(&path, &[7, 100_000], &data).unwrap();
    let mut last = (0, 0);
    let back = io::read_scores(&path, None, &mut |done, total| {
        assert!(done > last.0 && done <= total);
        last = (done, total);
    })
    .unwrap();
    assert_eq!(last, (2_800_000, 2_800_000));
    assert_eq!(back.data, data);
}

#[test]
fn corrupt_headers_are_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.npy");
    for dict in [
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2}",
        "{'descr': '<f4', 'shape': (2, 2), }",
        "not a dict at all",
    ] {
        raw_npy(&path, dict, &f32_bytes(&[0.0; 4]));
        let err = io::read_scores(&path, None, &mut no_progress()).unwrap_err();
        assert!(matches!(err, IoError::NpyHeader { .. }), "{dict}: {err}");
        assert!(err.to_string().contains("numpy.save"), "{err}");
    }
    std::fs::write(&path, b"\x93NUMPY\x01\x00\xff\xff{'descr'").unwrap();
    let err = io::read_scores(&path, None, &mut no_progress()).unwrap_err();
    assert!(matches!(err, IoError::NpyHeader { .. }), "{err}");
    std::fs::write(&path, b"plain text, not an array").unwrap();
    let err = io::read_scores(&path, None, &mut no_progress()).unwrap_err();
    assert!(matches!(err, IoError::NpyHeader { .. }), "{err}");
    let other = dir.path().join("scores.bin");
    std::fs::write(&other, b"plain text, not an array").unwrap();
    let err = io::read_scores(&other, None, &mut no_progress()).unwrap_err();
    assert!(matches!(err, IoError::UnknownFormat { .. }), "{err}");
}

#[test]
fn truncated_and_overlong_data_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.npy");
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    raw_npy(&path, dict, &f32_bytes(&[1.0; 5]));
    let err = io::read_scores(&path, None, &mut no_progress()).unwrap_err();
    assert!(
        matches!(
            err,
            IoError::Truncated {
                expected: 24,
                found: 20,
                ..
            }
        ),
        "{err}"
    );
    raw_npy(&path, dict, &f32_bytes(&[1.0; 7]));
    let err = io::read_scores(&path, None, &mut no_progress()).unwrap_err();
    assert!(
        matches!(err, IoError::TrailingBytes { extra: 4, .. }),
        "{err}"
    );
}

#[test]
fn dtype_rank_byte_order_and_layout_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.npy");
    let case = |dict: &str, bytes: usize| {
        raw_npy(&path, dict, &vec![0u8; bytes]);
        io::read_scores(&path, None, &mut no_progress()).unwrap_err()
    };
    let err = case(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }",
        32,
    );
    assert!(
        matches!(&err, IoError::Dtype { found, .. } if found == "float64"),
        "{err}"
    );
    assert!(err.to_string().contains("astype(numpy.float32)"), "{err}");
    let err = case(
        "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }",
        16,
    );
    assert!(matches!(err, IoError::BigEndian { .. }), "{err}");
    let err = case(
        "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
        16,
    );
    assert!(matches!(err, IoError::FortranOrder { .. }), "{err}");
    let err = case(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
        16,
    );
    assert!(matches!(err, IoError::Rank { expected: 2, .. }), "{err}");
    let err = case(
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 2), }",
        16,
    );
    assert!(matches!(err, IoError::Dtype { .. }), "{err}");
    // A Fortran-ordered single row has the same bytes as a C-ordered one.
    raw_npy(
        &path,
        "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2), }",
        &f32_bytes(&[3.0, 4.0]),
    );
    assert_eq!(
        io::read_scores(&path, None, &mut no_progress())
            .unwrap()
            .data,
        vec![3.0, 4.0]
    );
    // Lengths must be integers.
    raw_npy(
        &path,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
        &[0; 8],
    );
    let err = io::read_lengths(&path, None).unwrap_err();
    assert!(
        matches!(&err, IoError::Dtype { expected, .. } if expected == "int32 or int64"),
        "{err}"
    );
}

#[test]
fn missing_files_name_the_path() {
    let err = io::read_scores(
        std::path::Path::new("/nonexistent/dir/s.npy"),
        None,
        &mut no_progress(),
    )
    .unwrap_err();
    assert!(matches!(err, IoError::NotFound { .. }));
    assert!(err.to_string().contains("/nonexistent/dir/s.npy"), "{err}");
}

#[test]
fn failed_writes_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let err = npy::write(&dir.path().join("no/such/dir/x.npy"), &[1], &[1i32]).unwrap_err();
    assert!(matches!(err, IoError::Write { .. }), "{err}");
    assert!(files_in(dir.path()).is_empty());
    // Overwriting keeps the old file until the new one is complete, then replaces it.
    let path = dir.path().join("x.npy");
    npy::write(&path, &[1], &[1i32]).unwrap();
    npy::write(&path, &[2], &[2i32, 3]).unwrap();
    assert_eq!(io::read_lengths(&path, None).unwrap(), vec![2, 3]);
    assert_eq!(files_in(dir.path()), vec!["x.npy"]);
}

#[test]
fn safetensors_round_trip_and_tensor_choice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.safetensors");
    let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let b = [-1.0f32, f32::INFINITY];
    io::safetensors::write(
        &path,
        &[
            NamedTensor {
                name: "scores",
                shape: &[2, 3],
                data: &a,
            },
            NamedTensor {
                name: "other",
                shape: &[1, 2],
                data: &b,
            },
        ],
    )
    .unwrap();
    let by_name = io::read_scores(&path, Some("other"), &mut no_progress()).unwrap();
    assert_eq!(
        (by_name.rows, by_name.width, by_name.data),
        (1, 2, b.to_vec())
    );
    // Without a name, the tensor called `scores` is the default.
    let default = io::read_scores(&path, None, &mut no_progress()).unwrap();
    assert_eq!(default.data, a.to_vec());
    let err = io::read_scores(&path, Some("nope"), &mut no_progress()).unwrap_err();
    assert!(
        matches!(&err, IoError::TensorNotFound { available, .. } if available == "other, scores"),
        "{err}"
    );
    // Lengths have no `scores` fallback: two tensors are ambiguous.
    let err = io::read_lengths(&path, None).unwrap_err();
    assert!(matches!(err, IoError::TensorAmbiguous { .. }), "{err}");
}

#[test]
fn corrupt_and_truncated_safetensors_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.safetensors");
    io::safetensors::write(
        &path,
        &[NamedTensor {
            name: "s",
            shape: &[4, 4],
            data: &[0.5f32; 16],
        }],
    )
    .unwrap();
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(&path, &whole[..whole.len() - 3]).unwrap();
    let err = io::read_scores(&path, None, &mut no_progress()).unwrap_err();
    assert!(matches!(err, IoError::Truncated { .. }), "{err}");
    std::fs::write(&path, &whole[..20]).unwrap();
    let err = io::read_scores(&path, None, &mut no_progress()).unwrap_err();
    assert!(matches!(err, IoError::SafetensorsHeader { .. }), "{err}");
    let mut garbled = whole.clone();
    garbled[8] = b'#'; // the opening brace of the JSON header
    std::fs::write(&path, &garbled).unwrap();
    let err = io::read_scores(&path, None, &mut no_progress()).unwrap_err();
    assert!(matches!(err, IoError::SafetensorsHeader { .. }), "{err}");
    io::safetensors::write(
        &path,
        &[NamedTensor {
            name: "s",
            shape: &[2, 2],
            data: &[1i64, 2, 3, 4],
        }],
    )
    .unwrap();
    let err = io::read_scores(&path, None, &mut no_progress()).unwrap_err();
    assert!(
        matches!(&err, IoError::Dtype { found, .. } if found == "int64"),
        "{err}"
    );
}

mod arbitrary_bytes {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Whatever follows the magic, reading returns an array or an error; it never panics.
        #[test]
        fn npy_reader_never_panics(header in "[ -~]{0,120}", tail in proptest::collection::vec(any::<u8>(), 0..64), len in any::<u16>()) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("x.npy");
            let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
            bytes.extend_from_slice(&len.to_le_bytes());
            bytes.extend_from_slice(header.as_bytes());
            bytes.extend_from_slice(&tail);
            std::fs::write(&path, bytes).unwrap();
            let _ = io::read_scores(&path, None, &mut |_, _| {});
            let _ = io::read_lengths(&path, None);
        }

        /// Headers that are almost right (shape and dtype drawn at random) are read or refused.
        #[test]
        fn plausible_npy_headers_are_read_or_refused(
            descr in "[<>=|][fiub][1248]",
            fortran in any::<bool>(),
            dims in proptest::collection::vec(0usize..5, 0..4),
            extra in 0usize..9,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("x.npy");
            let shape = match dims.as_slice() {
                [one] => format!("({one},)"),
                _ => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
            };
            let dict = format!("{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}", if fortran { "True" } else { "False" });
            let n: usize = dims.iter().product();
            raw_npy(&path, &dict, &vec![0u8; n * 4 + extra]);
            let read = io::read_scores(&path, None, &mut |_, _| {});
            let readable = descr.ends_with("f4") && !descr.starts_with('>') && !descr.starts_with('|')
                && dims.len() == 2 && extra == 0 && (!fortran || dims.iter().filter(|&&d| d > 1).count() <= 1);
            prop_assert_eq!(read.is_ok(), readable, "{} -> {:?}", dict, read.err().map(|e| e.to_string()));
        }
    }
}

//! Evaluation shapes: the operator matrix and the framework traces of paper §6.2-6.3.

use topk_bench::shapes::{
    operator_matrix, parse_list, trace, trace_with, OPERATOR_ROWS, OPERATOR_WIDTHS, STEP_TOKENS,
    WORKSPACE_BYTES,
};

#[test]
fn operator_matrix_is_five_row_counts_by_four_widths() {
    let shapes = operator_matrix();
    assert_eq!(shapes.len(), 20);
    for &m in &OPERATOR_ROWS {
        for &n in &OPERATOR_WIDTHS {
            assert!(shapes.iter().any(|s| s.rows == m && s.width == n));
        }
    }
    let last = shapes.last().unwrap();
    let lengths = last.lengths();
    assert_eq!(lengths.len(), 8192);
    assert_eq!(*lengths.last().unwrap(), 1 << 20);
}

#[test]
fn traces_give_the_papers_call_counts() {
    assert_eq!(trace(250_880).len(), 26);
    assert_eq!(trace(440_320).len(), 71);
}

#[test]
fn trace_calls_cover_every_position_once_within_the_budget() {
    for tokens in [1, 65_536, 65_537, 250_880, 440_320] {
        let calls = trace(tokens);
        let mut next = 0;
        for c in &calls {
            assert_eq!(c.first_position, next, "calls are contiguous and in order");
            assert!(c.rows >= 1);
            assert!(
                c.rows * c.width * 4 <= WORKSPACE_BYTES,
                "{c:?} exceeds the budget"
            );
            // The width is the end of the call's scheduler step.
            let step_end = ((c.first_position / STEP_TOKENS + 1) * STEP_TOKENS).min(tokens);
            assert_eq!(c.width, step_end);
            let lengths = c.lengths();
            assert_eq!(lengths[0] as usize, c.first_position + 1);
            assert!(lengths.iter().all(|&l| l as usize <= c.width));
            next += c.rows;
        }
        assert_eq!(next, tokens);
    }
    // A budget below one row still makes progress, one row per call.
    assert_eq!(trace_with(5, 4, 1).len(), 5);
}

#[test]
fn shape_lists_parse_and_name_the_bad_shape() {
    assert_eq!(
        parse_list("512x131072, 8x1048576"),
        Ok(vec![(512, 131_072), (8, 1_048_576)])
    );
    for bad in ["512", "0x100", "8x0", "8xq", "8x1,x2"] {
        let err = parse_list(bad).unwrap_err();
        assert!(err.contains("expected ROWSxWIDTH"), "{bad}: {err}");
    }
}

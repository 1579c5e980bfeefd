//! The terminal causal window: the lengths of an indexer call.

use topk_runtime::data::shapes::causal_window;

#[test]
fn causal_window_ends_at_the_width() {
    let w = causal_window(4, 10);
    assert_eq!(w, [7, 8, 9, 10]);
    assert_eq!(causal_window(3, 2), [0, 1, 2]);
    assert!(causal_window(0, 10).is_empty());
}

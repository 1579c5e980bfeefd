//! Row shapes of the evaluation (DESIGN §6): the operator matrix of paper §6.2 and the
//! framework traces of §6.3, over terminal causal windows
//! ([`topk_runtime::data::shapes::causal_window`]).

use topk_runtime::data::shapes::causal_window;

/// Rows per call in the operator matrix.
pub const OPERATOR_ROWS: [usize; 5] = [512, 1024, 2048, 4096, 8192];
/// Allocated widths in the operator matrix: 128K, 256K, 512K, 1M.
pub const OPERATOR_WIDTHS: [usize; 4] = [131_072, 262_144, 524_288, 1_048_576];
/// Rank of the operator matrix and the traces.
pub const OPERATOR_K: u32 = 2048;

/// Query tokens per scheduler step of a chunked prefill.
pub const STEP_TOKENS: usize = 65_536;
/// Bytes of FP32 scores one indexer call may materialize.
pub const WORKSPACE_BYTES: usize = 6 << 30;

/// One cell of the operator matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OperatorShape {
    pub rows: usize,
    pub width: usize,
}

impl OperatorShape {
    /// The shape's valid lengths: the terminal causal window.
    pub fn lengths(&self) -> Vec<i32> {
        causal_window(self.rows, self.width)
    }
}

/// The 20 shapes of paper §6.2, width-major (every M at 128K first).
pub fn operator_matrix() -> Vec<OperatorShape> {
    OPERATOR_WIDTHS
        .iter()
        .flat_map(|&width| {
            OPERATOR_ROWS
                .iter()
                .map(move |&rows| OperatorShape { rows, width })
        })
        .collect()
}

/// One Top-K invocation of a framework trace: `rows` consecutive query positions starting at
/// `first_position`, scored against an allocated width of `width` keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Call {
    pub rows: usize,
    pub width: usize,
    pub first_position: usize,
}

impl Call {
    /// Valid lengths: the row for query position `t` has length `t + 1`.
    pub fn lengths(&self) -> Vec<i32> {
        (0..self.rows)
            .map(|j| (self.first_position + j + 1).min(i32::MAX as usize) as i32)
            .collect()
    }
}

/// The Top-K calls of a chunked prefill of `tokens` query tokens (paper §6.3) with the paper's
/// step size and workspace budget: see [`trace_with`].
pub fn trace(tokens: usize) -> Vec<Call> {
    trace_with(tokens, STEP_TOKENS, WORKSPACE_BYTES)
}

/// The Top-K calls of a chunked prefill: scheduler steps of `step_tokens` query positions
/// (the last step takes the remainder); the step ending at position `e` has width `e` and is
/// split, in order, into calls of at most `floor(budget_bytes / (4 e))` rows (at least one).
/// For the paper's 245K (250,880) and 430K (440,320) requests this gives 4 and 7 steps and
/// 26 and 71 calls.
pub fn trace_with(tokens: usize, step_tokens: usize, budget_bytes: usize) -> Vec<Call> {
    let mut calls = Vec::new();
    let step_tokens = step_tokens.max(1);
    let mut start = 0;
    while start < tokens {
        let end = (start + step_tokens).min(tokens);
        let rows_per_call = (budget_bytes / (4 * end)).max(1);
        let mut first = start;
        while first < end {
            let rows = rows_per_call.min(end - first);
            calls.push(Call {
                rows,
                width: end,
                first_position: first,
            });
            first += rows;
        }
        start = end;
    }
    calls
}

/// Parses a comma-separated list of `ROWSxWIDTH` shapes (`512x131072,8x1048576`), both sides
/// positive; the error names the first shape that is not one.
pub fn parse_list(text: &str) -> Result<Vec<(usize, usize)>, String> {
    text.split(',')
        .map(|s| {
            s.trim()
                .split_once('x')
                .and_then(|(m, n)| Some((m.parse().ok()?, n.parse().ok()?)))
                .filter(|&(m, n): &(usize, usize)| m > 0 && n > 0)
                .ok_or_else(|| format!("shape `{s}`: expected ROWSxWIDTH, e.g. 512x131072"))
        })
        .collect()
}

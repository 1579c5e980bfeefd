// The rule is over `map` and `threads`; the error points at `threads`, written later than `map`,
// not at `propose`, the last argument, which is not part of the rule.
const K: topk::KernelConst = topk::topk_kernel!(map = cluster, threads = 256, propose = exact);

fn main() {
    let _ = K;
}

const K: topk::KernelConst = topk::topk_kernel!(
    map = rowlocal_streaming,
    split = 2,
    propose = exact,
    threads = 1024
);

fn main() {
    let _ = K;
}

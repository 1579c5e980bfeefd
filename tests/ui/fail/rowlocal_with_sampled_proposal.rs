// A rule over two keys points at the one written later.
const K: topk::KernelConst =
    topk::topk_kernel!(propose = sampled, threads = 1024, map = rowlocal_register);

fn main() {
    let _ = K;
}

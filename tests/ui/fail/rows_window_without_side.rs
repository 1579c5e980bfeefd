const K: topk::KernelConst = topk::topk_kernel!(rows = window, transform = offset);

fn main() {
    let _ = K;
}

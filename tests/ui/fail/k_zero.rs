const K: topk::KernelConst = topk::topk_kernel!(map = persistent, k = 0);

fn main() {
    let _ = K;
}

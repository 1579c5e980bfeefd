const K: topk::KernelConst = topk::topk_kernel!(prior = "8/2");

fn main() {
    let _ = K;
}

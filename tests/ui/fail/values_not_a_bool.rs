const K: topk::KernelConst = topk::topk_kernel!(values = 1);

fn main() {
    let _ = K;
}

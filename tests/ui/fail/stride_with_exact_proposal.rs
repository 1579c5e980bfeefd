const K: topk::KernelConst = topk::topk_kernel!(propose = exact, stride = 64);

fn main() {
    let _ = K;
}

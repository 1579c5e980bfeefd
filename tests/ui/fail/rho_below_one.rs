const K: topk::KernelConst = topk::topk_kernel!(stride = 128, rho = 0.9, rescue = none);

fn main() {
    let _ = K;
}

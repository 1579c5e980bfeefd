const K: topk::KernelConst = topk::topk_kernel!(k = 2048, split = 4, exact_below = 24576);

fn main() {
    let _ = K;
}

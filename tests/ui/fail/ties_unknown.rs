const K: topk::KernelConst = topk::topk_kernel!(k = 64, ties = random);

fn main() {
    let _ = K;
}

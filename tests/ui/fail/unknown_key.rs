const K: topk::KernelConst = topk::topk_kernel!(k = 2048, blocks = 4);

fn main() {
    let _ = K;
}

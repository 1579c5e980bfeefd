const K: topk::KernelConst = topk::topk_kernel!(k = 2048, stride = 100, split = 4);

fn main() {
    let _ = K;
}

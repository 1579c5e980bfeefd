const K: topk::KernelConst = topk::topk_kernel!(k = 20000, stride = 64);

fn main() {
    let _ = K;
}

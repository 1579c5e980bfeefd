const K: topk::KernelConst = topk::topk_kernel!(k = 2048, threads = 512, k = 1024);

fn main() {
    let _ = K;
}

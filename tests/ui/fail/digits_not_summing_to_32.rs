const K: topk::KernelConst = topk::topk_kernel!(k = 2048, digits = [11, 11, 11], threads = 512);

fn main() {
    let _ = K;
}

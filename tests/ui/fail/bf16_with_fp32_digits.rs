const K: topk::KernelConst = topk::topk_kernel!(dtype = bf16, digits = "11+11+10");

fn main() {
    let _ = K;
}

// Every documented form of every key expands to a const.
const DEFAULT: topk::KernelConst = topk::topk_kernel!();
const KV4: topk::KernelConst = topk::topk_kernel!(k = 2048, stride = 128, split = 4);
const S64: topk::KernelConst = topk::topk_kernel!(
    k = 2048,
    dtype = f32,
    map = persistent,
    propose = sampled,
    stride = 64,
    rho = 1.5,
    rescue = none,
    exact_below = 24576,
    coarse = 11,
    digits = "11+11+10",
    threads = 512,
);
const CLUSTER: topk::KernelConst = topk::topk_kernel!(
    map = cluster,
    propose = exact,
    threads = 1024,
    digits = [8, 8, 8, 8],
);
const ROWLOCAL: topk::KernelConst = topk::topk_kernel!(
    map = rowlocal_streaming,
    propose = exact,
    threads = 1024,
    k = 512
);
const KV8: topk::KernelConst = topk::topk_kernel!(map = kvsplit, split = 8, rho = 2, rescue = 2.5);
const SERVING: topk::KernelConst = topk::topk_kernel!(
    dtype = bf16,
    values = true,
    order = sorted,
    ties = lowest,
    rows = window_relative,
    transform = paged,
);
const DECODE: topk::KernelConst = topk::topk_kernel!(
    dtype = f16,
    digits = "8+8",
    values = false,
    order = any,
    ties = any,
    rows = decode,
    transform = offset,
);
const ABSOLUTE: topk::KernelConst =
    topk::topk_kernel!(rows = window_absolute, transform = none);
const LENGTHS: topk::KernelConst = topk::topk_kernel!(rows = lengths);
const PRIOR: topk::KernelConst = topk::topk_kernel!(prior = "2/8", boundary = true);

fn main() {
    for kernel in [
        DEFAULT, KV4, S64, CLUSTER, ROWLOCAL, KV8, SERVING, DECODE, ABSOLUTE, LENGTHS, PRIOR,
    ] {
        assert_eq!(topk::Spec::parse(kernel.text), Ok(kernel.spec));
        assert_eq!(kernel.spec.validate(), Ok(()));
    }
}

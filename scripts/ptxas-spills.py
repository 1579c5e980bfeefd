#!/usr/bin/env python3
"""Registers and spills of generated kernels, from ptxas (through NVRTC, sm_90a). Needs no GPU.

For each spec (the default map's kernels of the operator matrix and the few-row calls unless
specs are given) and each interface variant, prints ptxas' register count and spill bytes:

    python3 scripts/ptxas-spills.py                          # the default list
    python3 scripts/ptxas-spills.py 'k=2048,map=cluster(8),propose=exact,threads=1024'
    VARIANTS=',order=sorted' python3 scripts/ptxas-spills.py  # one variant (comma-led suffixes)

Uses the `topk` binary of target/release (cargo build --release -p topk) and the libnvrtc that
scripts/install-nvrtc.sh installs (or LIBNVRTC=path).
"""
import ctypes
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SPECS = [
    "k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5,exact_below=24576),threads=512,view=run(2),tail=2@264",
    "k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5,exact_below=24576),threads=384,view=run(2),prefetch=1",
    "k=2048,map=persistent,propose=sampled(stride=128,rho=1.5,rescue=2,exact_below=24576),threads=256,view=run(2)",
    "k=2048,map=cluster(16),propose=exact,threads=1024",
    "k=2048,map=cluster(8),propose=sampled(stride=128,rho=2,rescue=2.5),threads=1024,view=run(2)",
]
DEFAULT_VARIANTS = ["", ",values=true", ",order=sorted", ",ties=lowest", ",order=sorted,ties=lowest",
                    ",rows=window(relative)", ",transform=paged", ",dtype=f16",
                    ",dtype=bf16,order=sorted,ties=lowest,values=true"]


def nvrtc():
    path = os.environ.get("LIBNVRTC")
    if not path:
        lib_dir = subprocess.run([os.path.join(ROOT, "scripts/install-nvrtc.sh")], capture_output=True,
                                 text=True, check=True).stdout.strip()
        path = os.path.join(lib_dir, "libnvrtc.so.13")
    # NVRTC opens its builtins library by name; the loader's search path is fixed at start-up,
    # so load it from beside libnvrtc first.
    lib_dir = os.path.dirname(path)
    for name in sorted(os.listdir(lib_dir)):
        if name.startswith("libnvrtc-builtins.so"):
            ctypes.CDLL(os.path.join(lib_dir, name), mode=ctypes.RTLD_GLOBAL)
            break
    return ctypes.CDLL(path)


def ptxas_log(lib, source: bytes) -> str:
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source, b"kernel.cu", 0, None, None) != 0:
        raise RuntimeError("nvrtcCreateProgram failed")
    opts = [b"--gpu-architecture=sm_90a", b"-std=c++17", b"-Xptxas", b"-v"]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    text = log.value.decode()
    if rc != 0:
        raise RuntimeError(f"NVRTC failed:\n{text}")
    return text


def main() -> int:
    specs = sys.argv[1:] or DEFAULT_SPECS
    variants = os.environ["VARIANTS"].split(";") if "VARIANTS" in os.environ else DEFAULT_VARIANTS
    topk = os.path.join(ROOT, "target/release/topk")
    if not os.path.exists(topk):
        print("target/release/topk not found: cargo build --release -p topk", file=sys.stderr)
        return 2
    lib = nvrtc()
    print(f"{'regs':>4} {'spill st':>8} {'spill ld':>8}  spec")
    for spec in specs:
        for variant in variants:
            text = spec + variant
            gen = subprocess.run([topk, "codegen", "--spec", text], capture_output=True)
            if gen.returncode != 0:
                print(f"   -        -        -  {text}: {gen.stderr.decode().strip()}")
                continue
            log = ptxas_log(lib, gen.stdout)
            regs = re.search(r"Used (\d+) registers", log)
            spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
            print(f"{regs.group(1) if regs else '?':>4} {spill.group(1) if spill else '?':>8} "
                  f"{spill.group(2) if spill else '?':>8}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Registers and spills of generated kernels, from ptxas (through NVRTC, sm_90a). Needs no GPU.

For each spec (by default every kernel the default map picks at K = 2048 on the H200's facts,
read from `topk plan --table`) and each interface variant, prints ptxas' register count and
spill bytes per thread:

    python3 scripts/ptxas-spills.py                          # the default map's kernels
    python3 scripts/ptxas-spills.py 'k=2048,map=cluster(8),propose=exact,threads=1024'
    VARIANTS=',order=sorted' python3 scripts/ptxas-spills.py  # one variant (comma-led suffixes)

Uses the `topk` binary of target/release (cargo build --release -p topk) and the libnvrtc that
scripts/install-nvrtc.sh installs (or LIBNVRTC=path). The test
`the_default_maps_kernels_assemble_without_spills` (topk-runtime/tests/nvrtc_presets.rs) holds
the plain kernels to no spills.
"""
import ctypes
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def compile_program(lib, source: bytes, opts: list) -> tuple:
    """NVRTC over `source` with `opts` (sm_90a, C++17 and these): its log and its CUBIN."""
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source, b"kernel.cu", 0, None, None) != 0:
        raise RuntimeError("nvrtcCreateProgram failed")
    opts = [b"--gpu-architecture=sm_90a", b"-std=c++17"] + opts
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    text = log.value.decode()
    cubin = b""
    if rc == 0:
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetCUBIN(prog, out)
        cubin = out.raw
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    if rc != 0:
        raise RuntimeError(f"NVRTC failed:\n{text}")
    return text, cubin


def ptxas_log(lib, source: bytes) -> str:
    return compile_program(lib, source, [b"-Xptxas", b"-v"])[0]


def default_map_specs(topk: str) -> list:
    """The distinct specs of the default map's table at K = 2048 (H200 facts), in table order."""
    table = subprocess.run([topk, "plan", "--table", "--k", "2048", "--device-facts", "h200"],
                           capture_output=True, text=True, check=True).stdout
    specs = []
    for line in table.splitlines():
        if line.startswith("#") or not line.strip() or line.split()[0] == "K":
            continue
        spec = line.split()[-1]
        if spec not in specs:
            specs.append(spec)
    return specs


def with_variant(spec: str, variant: str) -> str:
    """The spec with the variant's fields appended; a variant that names a dtype replaces the
    spec's dtype, and a 16-bit one also drops the spec's FP32 digits (the 16-bit default then
    applies)."""
    fields = [f for f in spec.split(",") if f]
    added = [f for f in variant.split(",") if f]
    if any(f.startswith("dtype=") for f in added):
        fields = [f for f in fields if not f.startswith("dtype=")]
        if any(f in ("dtype=f16", "dtype=bf16") for f in added):
            fields = [f for f in fields if not f.startswith("digits=")]
    return ",".join(fields + added)


def main() -> int:
    variants = os.environ["VARIANTS"].split(";") if "VARIANTS" in os.environ else DEFAULT_VARIANTS
    topk = os.path.join(ROOT, "target/release/topk")
    if not os.path.exists(topk):
        print("target/release/topk not found: cargo build --release -p topk", file=sys.stderr)
        return 2
    specs = sys.argv[1:] or default_map_specs(topk)
    lib = nvrtc()
    print(f"{'regs':>4} {'spill st':>8} {'spill ld':>8}  spec")
    for spec in specs:
        for variant in variants:
            text = with_variant(spec, variant)
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

#!/usr/bin/env python3
"""Where a profiled kernel's instructions go, by function and source line. Needs no GPU.

    python3 scripts/ncu-lines.py SPEC SASS_CSV [TOP]

SASS_CSV is the per-instruction page that bench/ncu-kernel.sh writes (`ncu-*-sass.csv`, or
that file xz-compressed, `.csv.xz`, as kept in bench/results); SPEC
is the profiled kernel's spec (the `spec` field of its log), from the tree that built it. The
kernel is compiled here as the runtime compiles it (NVRTC, sm_90a, -lineinfo), disassembled
with its line table, and its instructions aligned by opcode with the page's; each executed warp
instruction and stall sample is then charged to the generated source's line and function. The
share of the page's instructions that matched is printed first: anything but all of them means
the page came from other code. Uses target/release/topk (cargo build --release -p topk), the
libnvrtc of scripts/install-nvrtc.sh (or LIBNVRTC) and nvdisasm as scripts/sass-diff.py finds it.
"""
import collections
import csv
import difflib
import importlib.util
import lzma
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script(name):
    path = os.path.join(ROOT, "scripts", name)
    spec = importlib.util.spec_from_file_location(name.replace("-", "_").removesuffix(".py"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def opcode(instruction: str) -> str:
    """The mnemonic, without a predicate guard."""
    words = instruction.split()
    return words[1] if words and words[0].startswith("@") else (words[0] if words else "")


def functions_by_line(lines):
    """The enclosing __device__/__global__ function's name for every source line."""
    owner, name = {}, "?"
    for number, text in enumerate(lines, 1):
        head = re.match(r'\s*(?:extern "C" )?__(?:device|global)__.*?(\w+)\s*\(', text)
        if head:
            name = head.group(1)
        owner[number] = name
    return owner


def main() -> int:
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    spec_text, page = sys.argv[1], sys.argv[2]
    top = int(sys.argv[3]) if len(sys.argv) == 4 else 30
    topk = os.path.join(ROOT, "target/release/topk")
    source = subprocess.run([topk, "codegen", "--spec", spec_text], capture_output=True,
                            check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            spills = script("ptxas-spills.py")  # its NVRTC loader and compile
            f.write(spills.compile_program(spills.nvrtc(), source, [b"-lineinfo"])[1])
        built = script("sass-diff.py").instructions(path)
    opener = lzma.open if page.endswith(".xz") else open
    with opener(page, "rt") as f:
        rows = list(csv.reader(f))
    header = next(i for i, row in enumerate(rows) if "Source" in row)
    cols = rows[header]
    wanted = ("Source", "Instructions Executed", "Warp Stall Sampling (All Samples)")
    src, executed, samples = (cols.index(c) for c in wanted)
    profiled = [(opcode(r[src]), int(r[executed] or 0), int(r[samples] or 0))
                for r in rows[header + 1:]]
    matcher = difflib.SequenceMatcher(None, [opcode(i[1]) for i in built],
                                      [p[0] for p in profiled], autojunk=False)
    by_line, stalls = collections.Counter(), collections.Counter()
    matched = 0
    for a, b, n in matcher.get_matching_blocks():
        for k in range(n):
            line = built[a + k][2]
            by_line[line] += profiled[b + k][1]
            stalls[line] += profiled[b + k][2]
            matched += profiled[b + k][1]
    total = sum(p[1] for p in profiled) or 1
    print(f"{len(built)} instructions built, {len(profiled)} profiled; "
          f"{100 * matched / total:.1f}% of the executed warp instructions matched")
    lines = source.decode().splitlines()
    owner = functions_by_line(lines)
    by_function, function_stalls = collections.Counter(), collections.Counter()
    for line, count in by_line.items():
        by_function[owner.get(line, "?")] += count
        function_stalls[owner.get(line, "?")] += stalls[line]
    print("\nby function: share of executed warp instructions, stall samples")
    for name, count in by_function.most_common(top):
        print(f"  {100 * count / total:5.1f}%  {function_stalls[name]:7d}  {name}")
    print("\nby source line of the generated kernel (topk codegen --spec SPEC)")
    for line, count in by_line.most_common(top):
        text = lines[line - 1].strip()[:90] if 0 < line <= len(lines) else "?"
        print(f"  {100 * count / total:5.1f}%  {stalls[line]:7d}  {line:5d}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

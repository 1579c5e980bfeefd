#!/usr/bin/env python3
"""Where two CUBINs of one kernel differ, in source terms.

    scripts/sass-diff.py OLD.cubin OLD.cu NEW.cubin NEW.cu

Disassembles both with nvdisasm (with line info: the runtime compiles with -lineinfo), aligns
the instruction sequences (addresses and encodings dropped) and prints, for every differing
stretch, the source lines its instructions come from on each side. `scripts/cubin-hashes.sh`
with TOPK_CUBIN_HASHES_DUMP writes such pairs. nvdisasm: PATH, $NVDISASM, or
`pip install --target .dev/nvdisasm nvidia-cuda-nvdisasm`.
"""
import difflib
import os
import re
import shutil
import subprocess
import sys


def nvdisasm():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    local = os.path.join(root, ".dev/nvdisasm/nvidia/cu13/bin/nvdisasm")
    for candidate in (os.environ.get("NVDISASM"), local, shutil.which("nvdisasm")):
        if candidate and os.path.exists(candidate):
            return candidate
    sys.exit("nvdisasm not found: set NVDISASM or pip install --target .dev/nvdisasm "
             "nvidia-cuda-nvdisasm")


def instructions(cubin):
    """(function, instruction, source line) of every instruction, in order."""
    text = subprocess.run([nvdisasm(), "-c", "-g", cubin], check=True, capture_output=True,
                          text=True).stdout
    out, line, function = [], 0, "?"
    for raw in text.splitlines():
        at = re.search(r'//## File ".*", line (\d+)', raw)
        if at:
            line = int(at.group(1))
            continue
        if raw.lstrip().startswith(".text."):
            function = raw.strip().rstrip(":")
        ins = re.sub(r"/\*[0-9a-fx]*\*/", "", raw).strip()
        if ins.endswith(";"):
            # Branch targets are labels that renumber when code moves: compare the opcode part.
            out.append((function, re.sub(r"\.L_x_\d+", "L", ins), line))
    return out


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    old_bin, old_cu, new_bin, new_cu = sys.argv[1:]
    old, new = instructions(old_bin), instructions(new_bin)
    src = {"old": open(old_cu).read().splitlines(), "new": open(new_cu).read().splitlines()}
    matcher = difflib.SequenceMatcher(None, [i[:2] for i in old], [i[:2] for i in new],
                                      autojunk=False)
    stretches = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    print(f"{len(old)} / {len(new)} instructions; {len(stretches)} differing stretches")
    for side, seq, lo, hi in (("old", old, 1, 2), ("new", new, 3, 4)):
        lines = sorted({seq[k][2] for op in stretches for k in range(op[lo], op[hi])})
        print(f"\n{side}: {sum(op[hi] - op[lo] for op in stretches)} differing instructions "
              f"from {len(lines)} source lines")
        for n in lines:
            text = src[side][n - 1].strip() if 0 < n <= len(src[side]) else "?"
            print(f"  {n:5}: {text}")


if __name__ == "__main__":
    main()

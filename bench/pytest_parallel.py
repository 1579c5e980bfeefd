"""Runs pytest's tests in several processes side by side, for GPU hosts where the tests spend
their time compiling kernels (NVRTC uses one core per compile): collects the test ids of the
given files, deals them round-robin to N processes and waits for all of them.

    python3 bench/pytest_parallel.py -j 12 topk-python/tests/test_gpu_call.py ...

Each process's output goes to stdout in turn as it finishes, with a first line naming the
shard. Exit status: 0 when every shard passed, else the first failing shard's status (pytest's
5, "no tests collected", counts as passing for a shard that got no test). Only the standard
library and pytest itself.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile


def collect(files: list[str], extra: list[str]) -> list[str]:
    """The test ids pytest collects from ``files``."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *extra, *files],
        capture_output=True, text=True, check=False,
    )
    ids = [line.strip() for line in run.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    # Ids are relative to pytest's rootdir, which may lie below the directory the files were
    # named from: put back the part of each named file's path that the id lacks.
    for n, node in enumerate(ids):
        part = node.split("::", 1)[0]
        named = next((f for f in files if f.split("::", 1)[0].endswith(part)), None)
        if named is not None:
            ids[n] = named.split("::", 1)[0][: -len(part)] + node
    if run.returncode not in (0, 5) or not ids and run.returncode != 5:
        sys.stdout.write(run.stdout + run.stderr)
        raise SystemExit(run.returncode or 1)
    return ids


def deal(ids: list[str], shards: int) -> list[list[str]]:
    """``ids`` dealt round-robin to at most ``shards`` non-empty groups."""
    groups = [ids[i::shards] for i in range(max(1, shards))]
    return [g for g in groups if g]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-j", "--jobs", type=int, default=8, help="processes side by side [8]")
    parser.add_argument("files", nargs="+", help="test files (or ids) to collect from")
    args, extra = parser.parse_known_args()
    ids = collect(args.files, extra)
    print(f"pytest_parallel: {len(ids)} tests in {min(len(ids), args.jobs)} processes", flush=True)
    procs = []
    for n, group in enumerate(deal(ids, args.jobs)):
        log = tempfile.TemporaryFile("w+")
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-ra", "-v", *extra, *group]
        procs.append((n, len(group), subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
    status = 0
    for n, count, proc, log in procs:
        code = proc.wait()
        log.seek(0)
        print(f"==== shard {n} ({count} tests): pytest exit {code}", flush=True)
        sys.stdout.write(log.read())
        sys.stdout.flush()
        if code not in (0, 5) and status == 0:
            status = code
    return status


if __name__ == "__main__":
    raise SystemExit(main())

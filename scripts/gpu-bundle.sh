#!/usr/bin/env bash
# Builds everything a GPU machine without a Rust toolchain needs into .gpu/ (git-ignored):
# the CLI `topk`, the benchmark harness (`topk-bench`, `operator-matrix`, `context-parallel`,
# `interface-cost`, `prior-trace`)
# and the GPU test binaries. Run from the repository root, then carry .gpu to the GPU machine
# and run e.g. `.gpu/gpu_exact --ignored` or `.gpu/operator-matrix`.
set -euo pipefail
cargo build --release -p topk -p topk-bench --bins
mkdir -p .gpu
cp target/release/topk target/release/topk-bench target/release/operator-matrix \
  target/release/context-parallel target/release/interface-cost target/release/prior-trace .gpu/
# Test binaries: `cargo test --no-run` prints their paths.
cargo test --release -p topk-runtime --test gpu_exact --test gpu_call --test gpu_half --test gpu_prior --test gpu_policy --test gpu_sharded --test data_generator_gpu --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"])' \
  | while read -r exe; do cp "$exe" ".gpu/$(basename "$exe" | sed 's/-[0-9a-f]*$//')"; done
ls -la .gpu

#!/usr/bin/env bash
# Builds the operator-matrix benchmark (the `operator-matrix` binary of topk-bench; at revisions
# from before that crate, the example examples/05-operator-matrix) at each git revision named
# (branch, tag or commit) into .gpu/operator-matrix-<name> ('/' becomes '-'), for comparing kernel
# variants on the GPU machine with bench/ab.sh. Each revision is built in a temporary worktree;
# the dependencies are built once, in target/ab. Run from the repository root:
#
#   scripts/ab-bundle.sh main my-branch      # -> .gpu/operator-matrix-main, -my-branch
set -euo pipefail
if (($# == 0)); then
  echo "usage: scripts/ab-bundle.sh REV [REV ...]   (branches, tags or commits)" >&2
  exit 2
fi
root=$PWD
mkdir -p .gpu
for rev in "$@"; do
  git rev-parse --verify --quiet "$rev^{commit}" > /dev/null || {
    echo "ab-bundle: '$rev' is not a revision of this repository" >&2
    exit 2
  }
  name=${rev//\//-}
  dir=$(mktemp -d)
  git worktree add --quiet --detach "$dir" "$rev"
  if [[ -f $dir/topk-bench/src/bin/operator-matrix.rs ]]; then
    (cd "$dir" && CARGO_TARGET_DIR="$root/target/ab" cargo build --release --quiet -p topk-bench --bin operator-matrix)
    built="$root/target/ab/release/operator-matrix"
  else
    (cd "$dir" && CARGO_TARGET_DIR="$root/target/ab" cargo build --release --quiet --example 05-operator-matrix)
    built="$root/target/ab/release/examples/05-operator-matrix"
  fi
  cp "$built" ".gpu/operator-matrix-$name"
  git worktree remove --force "$dir"
  echo "built .gpu/operator-matrix-$name from $rev ($(git rev-parse --short "$rev"))"
done

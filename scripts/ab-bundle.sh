#!/usr/bin/env bash
# Builds the benchmark example (examples/05-operator-matrix) at each git revision named (branch,
# tag or commit) into .gpu/05-<name> ('/' becomes '-'), for comparing kernel variants on the GPU
# machine with bench/ab.sh. Each revision is built in a temporary worktree; the dependencies are
# built once, in target/ab. Run from the repository root:
#
#   scripts/ab-bundle.sh main my-branch      # -> .gpu/05-main, .gpu/05-my-branch
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
  (cd "$dir" && CARGO_TARGET_DIR="$root/target/ab" cargo build --release --quiet --example 05-operator-matrix)
  cp "$root/target/ab/release/examples/05-operator-matrix" ".gpu/05-$name"
  git worktree remove --force "$dir"
  echo "built .gpu/05-$name from $rev ($(git rev-parse --short "$rev"))"
done

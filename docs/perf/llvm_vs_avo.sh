#!/usr/bin/env bash
# llvm_vs_avo.sh — kgen's kernels through the LLVM path (C driver, kernels.ll via opt/llc -O3
# -mcpu=native) against kgen's own amd64 backend (Go driver, package kernels), one core, the same shapes,
# inputs and timing rule (best of reps), interleaved for ROUNDS rounds. Usage: docs/perf/llvm_vs_avo.sh [ROUNDS]
# CASES (optional, ';'-separated driver arguments) runs a subset, e.g. CASES="256 softmax;64 saxpy"; softmax and
# layernorm take the row length as a third argument (default 1024; 1000 has a remainder of 8 lanes).
# The module is generated with -host: the vector width and register tile of this machine's CPU (the
# llvm target row's AVX-512 variant when it has AVX-512F), as llc -mcpu=native compiles it.
# BASE (optional, another checkout of kgen, e.g. a worktree of main) adds that tree's LLVM path built the
# same way ("base" rows, driver from this tree), interleaved: a before/after of a change in one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
llvmpath() { # llvmpath TREE NAME: TREE's kernels.ll through opt/llc into the C driver $tmp/NAME
  (cd "$1" && go run ./cmd/kgen gen -host -o "$tmp/$2.pkg" -pkg kernels -targets llvm -tests=false kernels.kdsl >/dev/null)
  opt -O3 -mcpu=native "$tmp/$2.pkg/kernels.ll" -o "$tmp/$2.bc"
  llc -O3 -mcpu=native -relocation-model=pic -filetype=obj "$tmp/$2.bc" -o "$tmp/$2.o"
  clang-14 -O2 -I"$tmp/$2.pkg" docs/perf/llvm_vs_avo.c "$tmp/$2.o" -lm -o "$tmp/$2"
}
llvmpath . llvm
if [ -n "${BASE:-}" ]; then llvmpath "$BASE" base; fi
mkdir -p "$tmp/avo" && cp docs/perf/llvm_vs_avo_driver.go.txt "$tmp/avo/main.go"
mkdir -p cmd/kgen/testdata/tmp-lva && cp "$tmp/avo/main.go" cmd/kgen/testdata/tmp-lva/main.go
go build -o "$tmp/avo.bin" ./cmd/kgen/testdata/tmp-lva && rm -rf cmd/kgen/testdata/tmp-lva
IFS=";" read -r -a cases <<<"${CASES:-256;1024;2048;32 batch;1 skinny;16 skinny;256 softmax;256 layernorm;256 softmax 1000;256 layernorm 1000;64 saxpy}"
for r in $(seq "$rounds"); do
  for args in "${cases[@]}"; do
    # shellcheck disable=SC2086
    echo "round $r llvm $("$tmp/llvm" $args)"
    # shellcheck disable=SC2086
    if [ -n "${BASE:-}" ]; then echo "round $r base $("$tmp/base" $args)"; fi
    # shellcheck disable=SC2086
    echo "round $r avo  $(GOMAXPROCS=1 "$tmp/avo.bin" $args)"
  done
done

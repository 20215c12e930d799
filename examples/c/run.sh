#!/bin/sh
# Generates kgen's kernels as LLVM IR, compiles them with opt/llc, links main.c and runs it.
set -eu
cd "$(dirname "$0")"
mkdir -p "${1:-build}"
out=$(cd "${1:-build}" && pwd)
(cd ../.. && go run ./cmd/kgen gen -o "$out/pkg" -pkg kernels -targets llvm -tests=false kernels.kdsl >/dev/null)
CLANG=${CLANG:-clang-14}
opt -O3 "$out/pkg/kernels.ll" -o "$out/kernels.bc"
llc -O3 -relocation-model=pic -filetype=obj "$out/kernels.bc" -o "$out/kernels.o"
$CLANG -O2 -I"$out/pkg" main.c "$out/kernels.o" -lm -o "$out/example"
"$out/example"

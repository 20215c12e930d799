#!/usr/bin/env bash
# gpu-build.sh [OUT] — build, here (Go needed, no GPU), the binaries scripts/gpu-check.sh runs on a GPU
# machine without Go. CGO_ENABLED=0, GOOS=linux, GOARCH=${GOARCH:-amd64}. OUT (default _gpu/out,
# git-ignored) receives:
#   kernels.test   the package kgen generates from kernels.kdsl (-targets go,amd64,arm64,ptx:sm_80,sm_90a)
#                  with its tests: TestCUDA<Kernel> (every PTX kernel vs the reference interpreter on
#                  ragged shapes) and TestGPUBench (scripts/gpu/bench_test.go.txt);
#   cuda.test      rt/cuda's tests (TestGPUVectorAdd: the driver binding on the real driver);
#   gpu-check.sh   a copy of scripts/gpu-check.sh.
# Copy OUT to the GPU machine and run ./gpu-check.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-_gpu/out}
ARCH=${GOARCH:-amd64}
mkdir -p "$OUT"
PKG=_gpu/kernels # inside the module (it imports kgen's rt); git-ignored, and ./... patterns skip _ directories
rm -rf "$PKG"
go run ./cmd/kgen gen -targets go,amd64,arm64,ptx:sm_80,sm_90a -o "$PKG" kernels.kdsl
cp scripts/gpu/bench_test.go.txt "$PKG/gpu_bench_test.go"
export CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH
go vet "./$PKG"
go test -c -o "$OUT/kernels.test" "./$PKG"
go test -c -o "$OUT/cuda.test" ./rt/cuda
cp scripts/gpu-check.sh "$OUT/gpu-check.sh"
chmod +x "$OUT/gpu-check.sh"
echo "gpu-build: wrote $OUT/kernels.test, $OUT/cuda.test and $OUT/gpu-check.sh (linux/$ARCH)"

#!/usr/bin/env bash
# setup.sh — install what kgen's tests and tools need on a fresh Debian machine (run as root or with sudo):
# LLVM (llvm-mc checks the arm64 WORD encodings), qemu-user (runs arm64 tests), clang-14, gfortran (the LLVM backend's Fortran example), and NVIDIA's
# ptxas into .tools/ (from Debian's non-free component, without touching the system's apt sources).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
need=()
command -v llvm-mc >/dev/null || need+=(llvm)
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
command -v clang-14 >/dev/null || need+=(clang-14)
command -v gfortran >/dev/null || need+=(gfortran)
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v go >/dev/null || { echo "setup: Go 1.26 is required (https://go.dev/dl)" >&2; exit 1; }
go mod download
# ptxas: the PTX backend's tests assemble every kernel with it (and fail under KGEN_REQUIRE_TOOLS=1
# without it), so setup fails loudly when it cannot be fetched.
# An older .tools (ptxas 11.8 alone) is replaced: the sm_90a tests need ptxas 12 and cuobjdump.
if [ ! -x .tools/ptxas ] || [ ! -x .tools/cuobjdump ] || [[ $(.tools/ptxas --version) != *"release 12."* ]]; then
  ./scripts/fetch-ptxas.sh .tools >/dev/null || { echo "setup: could not fetch ptxas into .tools/ (scripts/fetch-ptxas.sh)" >&2; exit 1; }
fi
echo "setup: ok"

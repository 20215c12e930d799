#!/usr/bin/env bash
# demo.sh — the main job: generate the kernel library from kernels.kdsl and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
go generate ./kernels
go run ./cmd/kgen-demo

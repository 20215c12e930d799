// Package mk holds the generated amd64 GEMM microkernels and FMA-peak kernels
// of package codegen/amd64 (default shapes), with their differential,
// guard-page, instruction-check and regeneration tests and benchmarks.
//
// Do not edit mk_amd64.s or stub_amd64.go: run go generate.
package mk

//go:generate go run ../gen -out .

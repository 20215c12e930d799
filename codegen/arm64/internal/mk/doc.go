// Package mk holds generated arm64 GEMM microkernels (mk_arm64.s, stub_arm64.go) and their tests.
// On other architectures, or with the purego tag, it is empty.
package mk

//go:generate go run ../gen

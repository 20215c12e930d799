// Package amd64 generates the x86-64 GEMM microkernels of kgen as Go
// assembly, using avo (github.com/mmcloughlin/avo) as a library.
//
// Every GEMM kernel implements the contract of docs/MICROKERNEL.md:
//
//	func kern(kc int, a, b, c *T, ldc int, m, n int, alpha, beta T, bias *T, ep int)
//
// with T float32 ("f32") or float64 ("f64"), on packed BLIS panels (Ã: MR×kc
// by columns, B̃: kc×NR by rows). The MR×NR accumulator tile lives in vector
// registers for the whole k loop; each k step loads NR/VL vectors of the B̃
// row, broadcasts MR elements of the Ã column and issues MR·NR/VL
// VFMADD231PS/PD. The k loop is unrolled KUnroll times with a one-step
// remainder loop, and prefetches Ã and B̃ a few steps ahead. The epilogue
// applies alpha, beta (beta == 0 never reads C), bias and ReLU, then stores
// the tile: full tiles (m == MR, n == NR) take an unmasked path, edge tiles
// store rows i < m only and mask columns j >= n (AVX-512 opmask registers,
// AVX2 VMASKMOVPS/PD), so no element outside m×n is read or written.
//
// Two instruction sets are supported: "avx2" (AVX2+FMA, 16 ymm registers) and
// "avx512" (AVX-512F, 32 zmm registers and opmasks). The package also emits
// FMA-peak kernels (independent FMA chains on registers only) used by
// benchmarks to express a kernel's speed as a fraction of the machine's peak,
// and, for both instruction sets, the vector-loop routines of the other
// kernels (vloop.go), transpose tiles (transpose.go) and rows kernels
// (rows.go); the packing routines (pack.go) are AVX2 only.
//
// Generate returns the text of a .s file and of the matching Go stub file
// (//go:build !purego, //go:noescape). The generated package must be built on
// amd64 only (name the files *_amd64.s / *_amd64.go) and must check the CPU
// (HostSupports) before calling a kernel.
package amd64

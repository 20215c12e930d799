// Package msl is kgen's Metal backend: it lowers the GPU-mapped loop IR of the msl pipeline
// (passes.Compile with the msl target: fusion, mmaform, gpumap, staging) to Metal Shading Language
// `kernel void` functions, one per ir.Launch, through a small typed syntax tree (ast.go) that only
// print.go turns into text.
package msl

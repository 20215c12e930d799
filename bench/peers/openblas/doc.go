// Package openblas opens OpenBLAS for kgen-bench. It is empty unless built
// with -tags peers and cgo.
package openblas

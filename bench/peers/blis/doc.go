// Package blis opens BLIS for kgen-bench. It is empty unless built with
// -tags peers and cgo.
package blis

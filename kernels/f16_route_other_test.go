//go:build !arm64 || purego

package kernels

// fp16Route reports whether the current variant runs hadd and haxpy on f16 lanes: only arm64's "neon"
// variant with FEAT_FP16 does (f16_route_arm64_test.go).
func fp16Route() bool { return false }

package metal

import (
	"fmt"
	"structs"
)

// Size is MTLSize: three NSUInteger (unsigned long, 64-bit on every macOS target) fields, 24 bytes,
// laid out as in C (structs.HostLayout). dispatchThreadgroups:threadsPerThreadgroup: takes two of
// them by value and maxThreadsPerThreadgroup returns one. How purego passes them:
//
//   - darwin/arm64 (AAPCS64 as Apple uses it): a composite larger than 16 bytes that is not a
//     homogeneous floating-point aggregate is copied to memory by the caller and passed as a
//     pointer in the next integer register; purego does exactly that (struct_arm64.go placeStack),
//     so self, _cmd, &grid, &threads go in x0..x3. A returned Size comes back through the memory
//     x8 points to, which purego allocates.
//   - darwin/amd64 (System V): an aggregate larger than two eightbytes has class MEMORY and is
//     copied onto the stack, three eightbytes each; purego's placeStack does that. A returned Size
//     is written through a hidden pointer, which is why purego/objc.Send uses objc_msgSend_stret on
//     amd64 for structs over 16 bytes.
//
// TestStructABI checks both paths on Linux against clang-built C functions with MTLSize parameters
// and results (amd64 in every run; arm64 by hand under qemu-aarch64).
type Size struct {
	_      structs.HostLayout
	Width  uint64
	Height uint64
	Depth  uint64
}

// SizeOf converts a Go [3]int (x, y, z) to a Size. Each component must be >= min; the error names
// what (for example "threads per threadgroup") with the offending value.
func SizeOf(what string, v [3]int, min int) (Size, error) {
	for i, c := range v {
		if c < min {
			return Size{}, fmt.Errorf("metal: %s %v: component %d is %d, want >= %d", what, v, i, c, min)
		}
	}
	return Size{Width: uint64(v[0]), Height: uint64(v[1]), Depth: uint64(v[2])}, nil
}

// Count returns Width*Height*Depth, or ok=false when the product overflows 64 bits.
func (s Size) Count() (n uint64, ok bool) {
	n = 1
	for _, c := range [3]uint64{s.Width, s.Height, s.Depth} {
		if c != 0 && n > ^uint64(0)/c {
			return 0, false
		}
		n *= c
	}
	return n, true
}

// LanguageVersion is MTLLanguageVersion, (major << 16) + minor, passed to MTLCompileOptions'
// languageVersion.
type LanguageVersion uint64

// Metal Shading Language versions kgen emits: 3.0 (macOS 13, the default; simdgroup_float8x8 and
// simdgroup_half8x8) and 3.1 (macOS 14; adds bfloat and simdgroup_bfloat8x8).
const (
	Metal30 LanguageVersion = 3<<16 + 0 // MTLLanguageVersion3_0
	Metal31 LanguageVersion = 3<<16 + 1 // MTLLanguageVersion3_1
)

func (v LanguageVersion) String() string { return fmt.Sprintf("Metal %d.%d", v>>16, v&0xffff) }

package ptx

import (
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestWGMMADescriptorDecode checks the emulator's reading of the canonical layouts against the IR's
// swizzled tiles that the backend describes (ir.Swizzle128B rows of 64 16-bit elements; CuTe's
// Swizzle<1,3,3> over 16-element rows for the 32-byte mode): A K-major and B MN-major at each k16 step
// of a 64-deep tile, and the K-major 32-byte and unswizzled layouts on small tiles.
func TestWGMMADescriptorDecode(t *testing.T) {
	const base = 5 * 1024 // an odd multiple of 1024
	desc := func(start, lbo, sbo int, mode uint64) uint64 {
		return uint64(start>>4) | uint64(lbo>>4)<<16 | uint64(sbo>>4)<<32 | mode<<62
	}
	at := func(l ir.Layout, r, c int) uint64 {
		v, err := ir.LayoutOffset(l, r, c, ir.IEnv{})
		if err != nil {
			t.Fatal(err)
		}
		return base + 2*uint64(v)
	}
	swz128 := ir.Swizzle128B(ir.IConst{V: 64}, 2)
	for s := 0; s < 4; s++ {
		for x := 0; x < 64; x++ {
			for k := 0; k < 16; k++ {
				if got, want := wgmmaAddr(desc(base+32*s, 16, 1024, 1), x, k, false), at(swz128, x, 16*s+k); got != want {
					t.Fatalf("A K-major 128B, step %d, (m %d, k %d): %d, the IR tile has it at %d", s, x, k, got, want)
				}
				if got, want := wgmmaAddr(desc(base+2048*s, 16, 1024, 1), x, k, true), at(swz128, 16*s+k, x); got != want {
					t.Fatalf("B MN-major 128B, step %d, (n %d, k %d): %d, the IR tile has it at %d", s, x, k, got, want)
				}
			}
		}
	}
	swz32 := ir.NewSwizzle(ir.RowMajor(ir.IConst{V: 16}), 1, 3, 3)
	for x := 0; x < 64; x++ {
		for k := 0; k < 16; k++ {
			if got, want := wgmmaAddr(desc(base, 16, 256, 3), x, k, false), at(swz32, x, k); got != want {
				t.Fatalf("K-major 32B (m %d, k %d): %d, want %d", x, k, got, want)
			}
			// unswizzled K-major: 8×8 core matrices of 128 contiguous bytes, LBO 128 (along K), SBO 256
			want := uint64(base + x/8*256 + k/8*128 + x%8*16 + k%8*2)
			if got := wgmmaAddr(desc(base, 128, 256, 0), x, k, false); got != want {
				t.Fatalf("K-major unswizzled (m %d, k %d): %d, want %d", x, k, got, want)
			}
		}
	}
}

// TestEmulatedWGMMAShapes runs two sm_90a wgmma GEMMs (hgemm; bgemm_tt, both operands transposed) in
// the emulator against the interpreter on ragged shapes around the 64×64×64 tile: 17, 64+1, 130 and
// mixed ones, a single row and a single column.
func TestEmulatedWGMMAShapes(t *testing.T) {
	fs := kernelsByName(t, "../../kernels.kdsl", "ptx:sm_90a")
	mnk := [][3]int{{17, 17, 17}, {65, 65, 65}, {130, 66, 130}, {1, 130, 65}, {130, 1, 17}, {64, 64, 128}}
	for _, name := range []string{"hgemm", "bgemm_tt"} {
		t.Run(name, func(t *testing.T) {
			f := fs[name]
			k, err := Lower(f, "sm_90a")
			if err != nil {
				t.Fatal(err)
			}
			var shapes []map[string]int
			for _, d := range mnk {
				shapes = append(shapes, map[string]int{"M": d[0], "N": d[1], "K": d[2]})
			}
			if err := checkDims(k, f, shapes, rand.New(rand.NewPCG(3, 90))); err != nil {
				t.Error(err)
			}
		})
	}
}

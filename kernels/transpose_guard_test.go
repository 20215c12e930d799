//go:build linux

package kernels

import (
	"testing"

	"github.com/kgen-dev/kgen/kgentest"
)

// guardedF32 returns n float32s ending at (end) or starting right after (!end) a PROT_NONE page, and
// the function that unmaps them.
func guardedF32(t *testing.T, n int, end bool) ([]float32, func()) {
	t.Helper()
	return kgentest.Guarded[float32](n, end)
}

// TestTransposeSlotGuard runs every tile shape up to 18×18 (and strides with padding) under every
// variant with the source and the destination flush against PROT_NONE pages, at their ends and at their
// starts: a read or write outside the tile faults.
func TestTransposeSlotGuard(t *testing.T) {
	defer Use("")
	for _, v := range Variants() {
		Use(v)
		for _, sh := range tileShapes() {
			rows, cols := sh[0], sh[1]
			for _, pad := range [][2]int{{0, 0}, {2, 3}} {
				lds, ldd := cols+pad[0], rows+pad[1]
				ns, nd := (rows-1)*lds+cols, (cols-1)*ldd+rows
				for _, end := range []bool{true, false} {
					src, freeSrc := guardedF32(t, ns, end)
					dst, freeDst := guardedF32(t, nd, !end)
					for i := range src {
						src[i] = float32(i)
					}
					transposeSlot.T(rows, cols, src, lds, dst, ldd)
					for r := 0; r < rows; r++ {
						for c := 0; c < cols; c++ {
							if dst[c*ldd+r] != src[r*lds+c] {
								t.Fatalf("variant %s, %d×%d: wrong element", v, rows, cols)
							}
						}
					}
					freeSrc()
					freeDst()
				}
			}
		}
	}
}

//go:build linux

package kernels

import (
	"syscall"
	"testing"
	"unsafe"
)

// guardedF32 returns n float32s ending at (end) or starting right after (!end) a PROT_NONE page, and
// the function that unmaps them.
func guardedF32(t *testing.T, n int, end bool) ([]float32, func()) {
	t.Helper()
	ps := syscall.Getpagesize()
	pages := (n*4+ps-1)/ps + 2
	mem, err := syscall.Mmap(-1, 0, pages*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[:ps], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[(pages-1)*ps:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	start := ps
	if end {
		start = (pages-1)*ps - n*4
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&mem[start])), n), func() { syscall.Munmap(mem) }
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

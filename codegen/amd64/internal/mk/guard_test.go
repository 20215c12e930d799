//go:build amd64 && !purego && linux

package mk

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// guarded is an anonymous mapping [PROT_NONE page | data pages | PROT_NONE page].
type guarded struct {
	mem  []byte
	page int
	data int // bytes of data
}

func newGuarded(t *testing.T, dataPages int) *guarded {
	t.Helper()
	ps := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, (dataPages+2)*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[:ps], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[(dataPages+1)*ps:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	return &guarded{mem: mem, page: ps, data: dataPages * ps}
}

// atEnd returns count elements of T ending exactly at the upper guard page.
func guardedAtEnd[T float](g *guarded, count int) []T {
	var z T
	end := g.page + g.data
	start := end - count*int(unsafe.Sizeof(z))
	return unsafe.Slice((*T)(unsafe.Pointer(&g.mem[start])), count)
}

// atStart returns count elements of T starting exactly after the lower guard page.
func guardedAtStart[T float](g *guarded, count int) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(&g.mem[g.page])), count)
}

// testGuard runs every edge shape m×n (ldc = n and ldc = n+3) with C and
// bias placed flush against PROT_NONE pages, at the end and at the start.
// Any read or write outside the m×n tile, or past bias[n-1], faults and
// crashes the test binary.
func testGuard[T float](t *testing.T, k kernel[T]) {
	gc := newGuarded(t, 4)
	gb := newGuarded(t, 1)
	rng := rand.New(rand.NewPCG(3, 4))
	for m := 1; m <= k.mr; m++ {
		for n := 1; n <= k.nr; n++ {
			for _, ldc := range []int{n, n + 3} {
				for _, kc := range []int{0, 5, 17} {
					p := newProblem[T](rng, k.mr, k.nr, kc, m, n, ldc)
					p.ep = 3
					if kc == 5 {
						p.beta = 0
					}
					for _, atEnd := range []bool{true, false} {
						var c, bias []T
						if atEnd {
							c, bias = guardedAtEnd[T](gc, len(p.c0)), guardedAtEnd[T](gb, n)
						} else {
							c, bias = guardedAtStart[T](gc, len(p.c0)), guardedAtStart[T](gb, n)
						}
						copy(c, p.c0)
						copy(bias, p.bias)
						p.check(t, k.name, p.run(k, c, bias))
					}
				}
			}
		}
	}
}

func TestGuardPageF32(t *testing.T) {
	for _, k := range f32Kernels {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testGuard(t, k.in(t, mode)) })
	}
}

func TestGuardPageF64(t *testing.T) {
	for _, k := range f64Kernels {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testGuard(t, k.in(t, mode)) })
	}
}

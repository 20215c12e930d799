//go:build !purego && unix

package mk

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"unsafe"
)

// guarded maps pages [guard][data...][guard] and returns the data bytes.
func guarded(t *testing.T, dataPages int) (data []byte, free func()) {
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
	return mem[ps : (dataPages+1)*ps], func() { syscall.Munmap(mem) }
}

func sliceAt[T float](buf []byte, off, n int) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(&buf[off])), n)
}

// Guard pages right after the last valid element of C and of bias (and right before C's first
// element): any access outside m×n or bias[:n] faults.
func guard[T float](t *testing.T, ks []kernel[T]) {
	var z T
	sz := int(unsafe.Sizeof(z))
	rng := rand.New(rand.NewSource(5))
	cbuf, freeC := guarded(t, 2)
	defer freeC()
	bbuf, freeB := guarded(t, 1)
	defer freeB()
	for _, k := range ks {
		for m := 1; m <= k.mr; m++ {
			for n := 1; n <= k.nr; n++ {
				for _, ldc := range []int{n, n + 3} {
					for _, atEnd := range []bool{true, false} {
						p := &problem[T]{mr: k.mr, nr: k.nr, m: m, n: n, kc: 5, ldc: ldc, alpha: 1, beta: 0.5, ep: 3}
						rebuild(p, rng)
						count := (m-1)*ldc + n // C elements from the first to the last valid one
						off := 0
						if atEnd {
							off = len(cbuf) - count*sz
						}
						c := sliceAt[T](cbuf, off, count)
						copy(c, p.c0)
						bias := sliceAt[T](bbuf, len(bbuf)-n*sz, n)
						for j := range bias {
							bias[j] = T(rng.NormFloat64())
						}
						p.bias = bias
						p.run(k.fn, c)
						// beta == 0 path too
						p2 := *p
						p2.beta = 0
						p2.run(k.fn, c)
						// verify the second call
						want := make([]T, len(p2.c0))
						copy(want, p2.c0)
						full := append(c[:count:count], make([]T, (m+1)*ldc-count)...)
						for i := count; i < len(full); i++ {
							full[i] = sentinel
						}
						q := p2
						q.c0 = want
						q.check(t, fmt.Sprintf("%s/guard", k.name), full)
					}
				}
			}
		}
	}
}

func TestGuardPagesF32(t *testing.T) { guard(t, kernels32) }
func TestGuardPagesF64(t *testing.T) { guard(t, kernels64) }

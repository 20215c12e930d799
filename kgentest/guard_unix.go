//go:build unix

package kgentest

import (
	"syscall"
	"unsafe"
)

// guardBytes returns n bytes that end exactly where a PROT_NONE page begins, so that any access past the
// end faults. The mapping is recorded for release by freeGuarded.
func guardBytes(n int) []byte {
	page := syscall.Getpagesize()
	pages := (n+page-1)/page + 1
	mem, err := syscall.Mmap(-1, 0, pages*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	if err := syscall.Mprotect(mem[(pages-1)*page:], syscall.PROT_NONE); err != nil {
		panic(err)
	}
	mapped = append(mapped, mem)
	end := (pages - 1) * page
	return mem[end-n : end : end]
}

func freeGuarded() {
	for _, m := range mapped {
		syscall.Munmap(m)
	}
	mapped = nil
}

const guardSupported = true

var _ = unsafe.Pointer(nil)

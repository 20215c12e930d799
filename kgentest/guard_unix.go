//go:build unix

package kgentest

import (
	"syscall"
	"unsafe"
)

// mapGuarded maps n bytes flush against a PROT_NONE page: ending where one begins (atEnd) or starting
// where one ends (!atEnd; the slice then has no spare capacity either). It returns the whole mapping and
// the n bytes.
func mapGuarded(n int, atEnd bool) (mem, s []byte) {
	page := syscall.Getpagesize()
	pages := (n+page-1)/page + 2
	mem, err := syscall.Mmap(-1, 0, pages*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
		panic(err)
	}
	if err := syscall.Mprotect(mem[(pages-1)*page:], syscall.PROT_NONE); err != nil {
		panic(err)
	}
	start := page
	if atEnd {
		start = (pages-1)*page - n
	}
	return mem, mem[start : start+n : start+n]
}

// guardBytes returns n bytes that end exactly where a PROT_NONE page begins, so that any access past the
// end faults. The mapping is recorded for release by freeGuarded.
func guardBytes(n int) []byte {
	mem, s := mapGuarded(n, true)
	mapped = append(mapped, mem)
	return s
}

func freeGuarded() {
	for _, m := range mapped {
		syscall.Munmap(m)
	}
	mapped = nil
}

// Guarded returns n elements of T flush against a PROT_NONE page, ending where it begins (atEnd) or
// starting where one ends (!atEnd), so that a kernel reading or writing outside the slice faults;
// release unmaps it. Without guard pages (non-unix) it returns ordinary memory.
func Guarded[T any](n int, atEnd bool) (s []T, release func()) {
	var zero T
	mem, b := mapGuarded(n*int(unsafe.Sizeof(zero)), atEnd)
	if n == 0 {
		return nil, func() { syscall.Munmap(mem) }
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n), func() { syscall.Munmap(mem) }
}

const guardSupported = true

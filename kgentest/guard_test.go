//go:build unix

package kgentest

import (
	"runtime/debug"
	"testing"
	"unsafe"
)

var sink float32

// TestGuarded: the element just past a Guarded slice (atEnd) or just before it (!atEnd) faults.
func TestGuarded(t *testing.T) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	for _, atEnd := range []bool{true, false} {
		s, release := Guarded[float32](5, atEnd)
		for i := range s {
			s[i] = float32(i) // the slice itself is usable
		}
		off := uintptr(len(s)) * 4 // one past the end
		if !atEnd {
			off = ^uintptr(3) // -4: one before the start
		}
		faulted := func() (f bool) {
			defer func() { f = recover() != nil }()
			p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), off)
			sink = *(*float32)(p)
			return false
		}()
		release()
		if !faulted {
			t.Errorf("atEnd=%v: the neighbouring element did not fault", atEnd)
		}
	}
}

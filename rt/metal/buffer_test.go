package metal

import (
	"strings"
	"testing"
)

func TestBuffer(t *testing.T) {
	d, f := newFakeDevice()
	for _, n := range []int{-1, 1<<20 + 1} {
		if _, err := d.NewBuffer(n); err == nil {
			t.Errorf("NewBuffer(%d) succeeded", n)
		}
	}
	if len(f.kinds) != 0 {
		t.Errorf("the driver saw refused sizes: %v", f.kinds)
	}
	// An empty buffer: Size 0, backed by one byte, no copy can reach that byte.
	e, err := NewBufferFrom[float32](d, nil)
	if err != nil || e.Size() != 0 || len(f.mem[e.h]) != 1 {
		t.Fatalf("NewBufferFrom(nil) = size %d (driver %d bytes), %v; want 0 backed by 1", e.Size(), len(f.mem[e.h]), err)
	}
	if err := e.WriteAt([]byte{1}, 0); err == nil {
		t.Error("WriteAt into an empty buffer succeeded")
	}
	if err := Download([]float32{}, e); err != nil {
		t.Errorf("Download of nothing from an empty buffer: %v", err)
	}
	e.Free()

	f64 := []float64{1.5, -2, 3e300}
	b, err := NewBufferFrom(d, f64)
	if err != nil || b.Size() != 24 {
		t.Fatalf("NewBufferFrom(3 float64) = %v (size %d), want 24 bytes", err, b.Size())
	}
	back := make([]float64, 3)
	if err := Download(back, b); err != nil || back[0] != 1.5 || back[1] != -2 || back[2] != 3e300 {
		t.Errorf("Download = %v, %v", back, err)
	}
	// The buffer's bytes are the driver's contents memory, in host byte order.
	if got := f.mem[b.h][8:16]; string(got) != "\x00\x00\x00\x00\x00\x00\x00\xc0" {
		t.Errorf("contents of element 1 = % x, want -2.0's bytes", got)
	}
	h := make([]uint16, 13)
	if err := Download(h, b); err == nil || !strings.Contains(err.Error(), "26 bytes at offset 0 outside a buffer of 24 bytes") {
		t.Errorf("Download past the end = %v", err)
	}
	if err := Upload(b, []uint16{0x3c00, 0xc000}); err != nil {
		t.Fatal(err)
	}
	if err := Download(h[:2], b); err != nil || h[0] != 0x3c00 || h[1] != 0xc000 {
		t.Errorf("uint16 round trip = %x, %v", h[:2], err)
	}
	for _, c := range [][2]int{{-1, 1}, {24, 1}, {20, 5}, {0, 25}} {
		if err := b.WriteAt(make([]byte, c[1]), c[0]); err == nil {
			t.Errorf("WriteAt(%d bytes at %d) succeeded on 24 bytes", c[1], c[0])
		}
		if err := b.ReadAt(make([]byte, c[1]), c[0]); err == nil {
			t.Errorf("ReadAt(%d bytes at %d) succeeded on 24 bytes", c[1], c[0])
		}
	}
	if err := b.WriteAt([]byte{9}, 23); err != nil || f.mem[b.h][23] != 9 {
		t.Errorf("WriteAt the last byte: %v", err)
	}
	if err := b.Zero(); err != nil {
		t.Fatal(err)
	}
	for i, x := range f.mem[b.h] {
		if x != 0 {
			t.Fatalf("after Zero, byte %d = %d", i, x)
		}
	}
	b.Free()
	b.Free()
	if bad := f.leaks(); len(bad) > 0 {
		t.Errorf("handles not released exactly once: %v", bad)
	}
}

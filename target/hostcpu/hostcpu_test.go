package hostcpu

import (
	"reflect"
	"runtime"
	"testing"
)

// The legacy AMD leaves as a KVM guest on an AMD EPYC Zen 5 returned them (Fn8000_0005 ECX, Fn8000_0006
// ECX and EDX, read on 2026-12-02), decoded by hand from the AMD APM's field layout: L1d 0x30 KiB,
// 0x0C ways, 0x40-byte lines; L2 0x0400 KiB, ways code 6 (8 ways), 0x40-byte lines; L3 0x3F8 units of
// 512 KiB, ways code 9 (given by Fn8000_001D: unknown here), 0x40-byte lines.
func TestAMDLegacy(t *testing.T) {
	got := amdLegacy(0x300c0140, 0x04006140, 0x0fe09140)
	want := []Cache{
		{Level: 1, Size: 48 << 10, Ways: 12, Line: 64},
		{Level: 2, Size: 1 << 20, Ways: 8, Line: 64},
		{Level: 3, Size: 0x3f8 * 512 << 10, Ways: 0, Line: 64},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("amdLegacy = %+v, want %+v", got, want)
	}
	if got := amdLegacy(0, 0, 0); got != nil {
		t.Fatalf("no caches reported: amdLegacy = %+v, want nil", got)
	}
	if got := amdLegacy(0x20ff0140, 0, 0); got[0].Ways != 0 {
		t.Fatalf("fully associative L1: Ways = %d, want 0 (unknown)", got[0].Ways)
	}
}

// leaf encodes one sub-leaf of CPUID leaf 4 / 0x8000001D from a cache's geometry (the inverse of
// decodeCacheLeaf's layout, written from the Intel SDM's field list).
func leaf(typ, level, ways, parts, line, sets uint32) (a, b, c uint32) {
	return typ | level<<5 | 1<<8, (ways-1)<<22 | (parts-1)<<12 | (line - 1), sets - 1
}

func TestCacheList(t *testing.T) {
	// A Sapphire-Rapids-like list: L1d 48 KiB 12-way, L1i 32 KiB (skipped), L2 2 MiB 16-way, L3 105 MiB
	// 15-way with 114688 sets; then the terminating type 0.
	subs := [][3]uint32{}
	add := func(a, b, c uint32) { subs = append(subs, [3]uint32{a, b, c}) }
	add(leaf(1, 1, 12, 1, 64, 64))
	add(leaf(2, 1, 8, 1, 64, 64))
	add(leaf(3, 2, 16, 1, 64, 2048))
	add(leaf(3, 3, 15, 1, 64, 114688))
	add(0, 0, 0)
	add(leaf(1, 1, 99, 1, 64, 64)) // after the end: never read
	got := cacheList(func(sub uint32) (uint32, uint32, uint32) {
		s := subs[sub]
		return s[0], s[1], s[2]
	})
	want := []Cache{
		{Level: 1, Size: 48 << 10, Ways: 12, Line: 64},
		{Level: 2, Size: 2 << 20, Ways: 16, Line: 64},
		{Level: 3, Size: 15 * 64 * 114688, Ways: 15, Line: 64},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cacheList = %+v, want %+v", got, want)
	}
	// a leaf that returns zeros (the same KVM guest's Fn8000_001D) lists nothing
	if got := cacheList(func(uint32) (uint32, uint32, uint32) { return 0, 0, 0 }); len(got) != 0 {
		t.Fatalf("all-zero leaf: cacheList = %+v, want none", got)
	}
}

// On x86-64 Linux (CPUID built in) the host always yields an L1 data cache from sysfs or CPUID, levels ascending and sizes
// growing; elsewhere it may yield nothing, but what it yields has the same shape.
func TestHostCaches(t *testing.T) {
	cs, src := Caches()
	t.Logf("source %q: %+v", src, cs)
	if hasCPUID && runtime.GOOS == "linux" && len(cs) == 0 {
		t.Fatal("no caches from sysfs or CPUID on x86-64 Linux")
	}
	if (len(cs) == 0) != (src == "") {
		t.Fatalf("source %q with %d caches", src, len(cs))
	}
	for i, c := range cs {
		if c.Size <= 0 || c.Level != cs[0].Level+i || (i > 0 && c.Size <= cs[i-1].Size) {
			t.Fatalf("cache %d = %+v in %+v: want levels ascending from L1, sizes growing", i, c, cs)
		}
	}
	if len(cs) > 0 && (cs[0].Level != 1 || cs[0].Size < 8<<10 || cs[0].Size > 1<<20) {
		t.Fatalf("L1 = %+v: want a data cache of 8 KiB to 1 MiB", cs[0])
	}
}

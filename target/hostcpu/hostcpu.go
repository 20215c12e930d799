// Package hostcpu tells what the code generator's cache model and the machine profile need to know of
// the CPU this process runs on: its data cache hierarchy, read from Linux sysfs where that lists it and
// from CPUID on x86-64 otherwise (virtual machines often have no cache entries in sysfs: a KVM guest on a
// Zen 5 was seen with none, and the cache blocks then fell back to a static table).
package hostcpu

//go:generate go run gen.go

import "github.com/kgen-dev/kgen/target/sysfs"

// Cache is one data or unified cache level.
type Cache = sysfs.Cache

// Caches returns the data and unified caches of the CPU, L1 first, and where they came from: sysfs's
// list where it has one ("sysfs"), else what CPUID reports ("cpuid"; x86-64 only), else nil and "".
// Ways and Line are 0 where the source does not give them.
func Caches() ([]Cache, string) {
	if cs := sysfs.Caches(); len(cs) > 0 {
		return cs, "sysfs"
	}
	if cs := cpuidCaches(); len(cs) > 0 {
		return cs, "cpuid"
	}
	return nil, ""
}

// decodeCacheLeaf reads one sub-leaf of CPUID leaf 4 (Intel) or 0x8000001D (AMD), which share a layout
// (Intel SDM vol. 2A, CPUID leaf 04H; AMD APM vol. 3, CPUID Fn8000_001D): EAX[4:0] the type (0 = no
// more caches, 1 data, 2 instruction, 3 unified), EAX[7:5] the level, EBX[11:0] line size − 1,
// EBX[21:12] physical line partitions − 1, EBX[31:22] ways − 1, ECX sets − 1. ok is false after the last
// cache; instruction caches come back with Size 0 and are skipped by the caller.
func decodeCacheLeaf(a, b, c uint32) (cache Cache, ok bool) {
	typ := a & 0x1f
	if typ == 0 {
		return Cache{}, false
	}
	if typ == 2 {
		return Cache{}, true
	}
	line := int(b&0xfff) + 1
	parts := int(b>>12&0x3ff) + 1
	ways := int(b>>22&0x3ff) + 1
	sets := int(c) + 1
	return Cache{Level: int(a >> 5 & 7), Size: line * parts * ways * sets, Ways: ways, Line: line}, true
}

// cacheList walks sub-leaves 0, 1, ... of a cache leaf through leaf (a CPUID function) and returns the data
// and unified caches, L1 first, at most one per level (the first listed).
func cacheList(cpuid func(sub uint32) (a, b, c uint32)) []Cache {
	var out []Cache
	seen := map[int]bool{}
	for sub := uint32(0); sub < 16; sub++ {
		a, b, c := cpuid(sub)
		cache, ok := decodeCacheLeaf(a, b, c)
		if !ok {
			break
		}
		if cache.Size == 0 || cache.Level == 0 || seen[cache.Level] {
			continue
		}
		seen[cache.Level] = true
		out = append(out, cache)
	}
	for i := 1; i < len(out); i++ { // insertion sort by level: the leaves list L1 first, but do not rely on it
		for j := i; j > 0 && out[j].Level < out[j-1].Level; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// amdLegacy decodes AMD's legacy cache leaves (AMD APM vol. 3, CPUID Fn8000_0005 ECX: L1 data cache;
// Fn8000_0006 ECX: L2, EDX: L3): l1 = size in KiB [31:24], ways [23:16] (0xFF fully associative), line
// [7:0]; l2 = size in KiB [31:16], encoded ways [15:12], line [7:0]; l3 = size in 512 KiB units [31:18],
// encoded ways [15:12], line [7:0]. A level of size 0 is absent.
func amdLegacy(l1, l2, l3 uint32) []Cache {
	var out []Cache
	if kb := int(l1 >> 24); kb > 0 {
		ways := int(l1 >> 16 & 0xff)
		if ways == 0xff {
			ways = 0
		}
		out = append(out, Cache{Level: 1, Size: kb << 10, Ways: ways, Line: int(l1 & 0xff)})
	}
	if kb := int(l2 >> 16); kb > 0 {
		out = append(out, Cache{Level: 2, Size: kb << 10, Ways: amdWays(l2 >> 12 & 0xf), Line: int(l2 & 0xff)})
	}
	if units := int(l3 >> 18); units > 0 {
		out = append(out, Cache{Level: 3, Size: units << 19, Ways: amdWays(l3 >> 12 & 0xf), Line: int(l3 & 0xff)})
	}
	return out
}

// amdWays decodes the associativity field of Fn8000_0006: 0 where it gives no number (disabled, fully
// associative, or "see Fn8000_001D"), which callers read as unknown.
func amdWays(code uint32) int {
	return [16]int{0, 1, 2, 3, 4, 6, 8, 0, 16, 0, 32, 48, 64, 96, 128, 0}[code]
}

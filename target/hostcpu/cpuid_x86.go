//go:build amd64 && !purego

package hostcpu

// hasCPUID: this build reads CPUID.
const hasCPUID = true

// cpuidCaches reads the caches from CPUID. AMD: leaf 0x8000001D (when the extended leaf exists and
// topology extensions are reported, CPUID Fn8000_0001 ECX bit 22), else the legacy leaves 0x80000005 and
// 0x80000006 (a KVM guest on a Zen 5 was seen returning zeros in 0x8000001D but filling these); others
// (Intel): leaf 4.
func cpuidCaches() []Cache {
	maxLeaf, b, c, d := CPUID(0, 0)
	if b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163 { // "AuthenticAMD"
		maxExt, _, _, _ := CPUID(0x80000000, 0)
		if maxExt >= 0x8000001D {
			if _, _, ecx, _ := CPUID(0x80000001, 0); ecx&(1<<22) != 0 {
				cs := cacheList(func(sub uint32) (uint32, uint32, uint32) {
					a, b, c, _ := CPUID(0x8000001D, sub)
					return a, b, c
				})
				if len(cs) > 0 {
					return cs
				}
			}
		}
		if maxExt < 0x80000006 {
			return nil
		}
		_, _, l1, _ := CPUID(0x80000005, 0)
		_, _, l2, l3 := CPUID(0x80000006, 0)
		return amdLegacy(l1, l2, l3)
	}
	if maxLeaf < 4 {
		return nil
	}
	return cacheList(func(sub uint32) (uint32, uint32, uint32) {
		a, b, c, _ := CPUID(4, sub)
		return a, b, c
	})
}

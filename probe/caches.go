package probe

import "github.com/kgen-dev/kgen/target/hostcpu"

// HostCaches is this CPU's data and unified caches in the profile's form: Linux sysfs's list, else CPUID's
// on x86-64 (package hostcpu), else nil. Each carries its source ("sysfs" or "cpuid").
func HostCaches() []Cache {
	cs, src := hostcpu.Caches()
	var out []Cache
	for _, c := range cs {
		out = append(out, Cache{Level: c.Level, Size: c.Size, Ways: c.Ways, Line: c.Line, Source: src})
	}
	return out
}

package probe

import "github.com/kgen-dev/kgen/target/sysfs"

// SysfsCaches is cpu0's data and unified caches as Linux sysfs lists them (nil elsewhere), in the
// profile's form.
func SysfsCaches() []Cache {
	var out []Cache
	for _, c := range sysfs.Caches() {
		out = append(out, Cache{Level: c.Level, Size: c.Size, Ways: c.Ways, Line: c.Line, Source: "sysfs"})
	}
	return out
}

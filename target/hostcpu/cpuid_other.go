//go:build !amd64 || purego

package hostcpu

// cpuidCaches: no CPUID here (another architecture, or -tags purego: no assembly); the caches are known
// only where sysfs lists them.
func cpuidCaches() []Cache { return nil }

// hasCPUID: this build does not read CPUID.
const hasCPUID = false

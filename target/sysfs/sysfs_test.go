package sysfs

import (
	"os"
	"testing"
)

// On Linux with sysfs, the levels come L1 first with positive sizes (a data L1 is never skipped for the
// instruction cache that shares its level); elsewhere the list is empty.
func TestCaches(t *testing.T) {
	cs := Caches()
	if _, err := os.Stat("/sys/devices/system/cpu/cpu0/cache/index0/level"); err != nil {
		if len(cs) != 0 {
			t.Fatalf("no sysfs, but Caches() = %v", cs)
		}
		t.Skip("no cache information in sysfs here")
	}
	if len(cs) == 0 || cs[0].Level != 1 {
		t.Fatalf("Caches() = %v, want a data L1 first", cs)
	}
	for i, c := range cs {
		if c.Size <= 0 || i > 0 && c.Level < cs[i-1].Level {
			t.Errorf("level %d: %+v (after %+v)", i, c, cs[max(i-1, 0)])
		}
	}
	t.Logf("%+v", cs)
}

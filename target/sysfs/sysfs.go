// Package sysfs reads the CPU's cache hierarchy from Linux sysfs: the one reading that target.Host (the
// cache model of generated code) and probe.Static (the machine profile) both use.
package sysfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Cache is one data or unified cache level of cpu0.
type Cache struct {
	Level, Size, Ways, Line int // Size and Line in bytes; Ways and Line 0 where sysfs does not give them
}

// Caches reads cpu0's data and unified caches from Linux sysfs, L1 first (nil elsewhere).
func Caches() []Cache {
	var out []Cache
	for idx := 0; idx < 8; idx++ {
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/", idx)
		level, err1 := readInt(dir + "level")
		typ, err2 := os.ReadFile(dir + "type")
		if err1 != nil || err2 != nil {
			break
		}
		if strings.TrimSpace(string(typ)) == "Instruction" {
			continue
		}
		size, err := readSize(dir + "size")
		if err != nil {
			continue
		}
		ways, _ := readInt(dir + "ways_of_associativity")
		line, _ := readInt(dir + "coherency_line_size")
		out = append(out, Cache{Level: level, Size: size, Ways: ways, Line: line})
	}
	return out
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func readSize(path string) (int, error) {
	s, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	t := strings.TrimSpace(string(s))
	mul := 1
	switch {
	case strings.HasSuffix(t, "K"):
		mul, t = 1<<10, strings.TrimSuffix(t, "K")
	case strings.HasSuffix(t, "M"):
		mul, t = 1<<20, strings.TrimSuffix(t, "M")
	}
	n, err := strconv.Atoi(t)
	return n * mul, err
}

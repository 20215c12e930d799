package probe

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// ClassParts is a machine class (Profile.Class) parsed back into the quantities it names. L1 and L2 are
// the cache sizes in bytes, 0 where the class does not name that level.
type ClassParts struct {
	Arch, ISA string
	Cores     int
	L1, L2    int
}

// String writes p in Profile.Class's format: String(ParseClass(c)) == c for every class Class produces.
func (p ClassParts) String() string {
	q := Profile{GOARCH: p.Arch, ISA: p.ISA, Cores: p.Cores}
	for lv, size := range []int{p.L1, p.L2} {
		if size > 0 {
			q.Caches = append(q.Caches, Cache{Level: lv + 1, Size: size})
		}
	}
	return q.Class()
}

// ParseClass parses a class written by Profile.Class: "ARCH-ISA-cCORES" followed by "-l1_SIZE" and
// "-l2_SIZE" where known, SIZE a byte count or a whole number of K or M.
func ParseClass(s string) (ClassParts, error) {
	var p ClassParts
	f := strings.Split(s, "-")
	if len(f) < 3 || f[0] == "" || f[1] == "" || !strings.HasPrefix(f[2], "c") {
		return p, fmt.Errorf("machine class %q: want ARCH-ISA-cCORES[-l1_SIZE][-l2_SIZE]", s)
	}
	p.Arch, p.ISA = f[0], f[1]
	n, err := strconv.Atoi(f[2][1:])
	if err != nil || n < 0 {
		return p, fmt.Errorf("machine class %q: core count %q is not a number", s, f[2])
	}
	p.Cores = n
	last := 0
	for _, part := range f[3:] {
		lv, size, ok := strings.Cut(part, "_")
		level := map[string]int{"l1": 1, "l2": 2}[lv]
		if !ok || level <= last {
			return p, fmt.Errorf("machine class %q: %q: want l1_SIZE then l2_SIZE", s, part)
		}
		last = level
		b, err := parseSize(size)
		if err != nil {
			return p, fmt.Errorf("machine class %q: %q: %v", s, part, err)
		}
		if level == 1 {
			p.L1 = b
		} else {
			p.L2 = b
		}
	}
	return p, nil
}

func parseSize(s string) (int, error) {
	mul := 1
	switch {
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a positive byte count, K or M", s)
	}
	return n * mul, nil
}

// Distance is how far apart two classes are for sharing tuned values, compared lexicographically: +Inf
// in the first element when they do not share the architecture and the vector level (their register
// tiles and microkernels differ, so their values do not transfer), else |log2| of the ratios of L2, L1
// and core counts, in that order of importance (a level one class names and the other does not counts
// +Inf at that position).
type Distance [4]float64

// Less reports whether d is nearer than e.
func (d Distance) Less(e Distance) bool {
	for i := range d {
		if d[i] != e[i] {
			return d[i] < e[i]
		}
	}
	return false
}

// ClassDistance is the distance between classes a and b.
func ClassDistance(a, b ClassParts) Distance {
	if a.Arch != b.Arch || a.ISA != b.ISA {
		return Distance{math.Inf(1)}
	}
	return Distance{0, logRatio(a.L2, b.L2), logRatio(a.L1, b.L1), logRatio(a.Cores, b.Cores)}
}

func logRatio(a, b int) float64 {
	switch {
	case a == b:
		return 0
	case a <= 0 || b <= 0:
		return math.Inf(1)
	}
	return math.Abs(math.Log2(float64(a) / float64(b)))
}

// Nearest returns the class among classes whose kgen.lock values a machine of class host should take,
// "" when none fits. An exact match wins; otherwise only classes of host's architecture and vector level
// are eligible, and among them the one nearest by L2 size ratio, then L1 size ratio, then core-count
// ratio (ClassDistance), ties going to the smaller class string. Cache blocks (MC, KC, NC) are sized
// to fit L2 and L1, so a class with the same caches has the blocks that fit this machine whatever its
// core count; the thresholds between versions (small, few-rows, parallel) move with the cores and
// matter less. Classes that do not parse are only ever chosen by exact match.
func Nearest(host string, classes []string) string {
	for _, c := range classes {
		if c == host {
			return c
		}
	}
	h, err := ParseClass(host)
	if err != nil {
		return ""
	}
	best, bestD := "", Distance{math.Inf(1)}
	for _, c := range classes {
		p, err := ParseClass(c)
		if err != nil {
			continue
		}
		d := ClassDistance(h, p)
		if d[0] != 0 {
			continue
		}
		if best == "" || d.Less(bestD) || (!bestD.Less(d) && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

// ClassEnv names the environment variable that, when set, replaces this machine's class in
// NearestHost. It exists for tests: a test plays a machine of another class and checks which kgen.lock
// entry a generated package installs. It is not a tuning knob (KGEN_VARIANT chooses variants).
const ClassEnv = "KGEN_MACHINE_CLASS"

// NearestHost is Nearest(HostClass(), classes), with $KGEN_MACHINE_CLASS in place of HostClass where set:
// what a generated package calls once at init to choose its kgen.lock values.
func NearestHost(classes []string) string { return Nearest(playedHost(), classes) }

// playedHost is this machine's class, or $KGEN_MACHINE_CLASS where set (the class a test plays).
func playedHost() string {
	if host := os.Getenv(ClassEnv); host != "" {
		return host
	}
	return HostClass()
}

// CacheRatioMax is how far apart (as |log2| of the size ratio) two classes' L1 sizes, and their L2
// sizes, may be for cache blocks tuned on one to be installed on the other: a factor √2. MC, KC and NC
// are sized to fill L2 and L1 (target.GemmBlocks), so a block tuned for a 2 MiB L2 overflows a 1 MiB
// one: the Xeon's tuned sgemm MC = 770 on a Zen 5 with 1 MiB L2 moved sgemm 2048 on two cores off the
// row-block path (docs/PERF.md). Thresholds between versions (small, few-rows, parallel) transfer to
// the nearest class whatever its caches.
const CacheRatioMax = 0.5

// MatchingCaches returns class when its L1 and L2 sizes are each within CacheRatioMax of this machine's
// (HostClass, or $KGEN_MACHINE_CLASS where set, as in NearestHost), else "": the class whose kgen.lock
// cache blocks a generated package installs (its other values come from NearestHost's class). A class
// or a host that does not name both sizes matches only itself.
func MatchingCaches(class string) string {
	if CachesMatch(playedHost(), class) {
		return class
	}
	return ""
}

// CachesMatch reports whether classes a and b may share cache blocks: the same class, or the same
// architecture and vector level with L1 and L2 each within CacheRatioMax.
func CachesMatch(a, b string) bool {
	if a == b {
		return a != ""
	}
	p, err1 := ParseClass(a)
	q, err2 := ParseClass(b)
	if err1 != nil || err2 != nil {
		return false
	}
	d := ClassDistance(p, q)
	return d[0] == 0 && d[1] <= CacheRatioMax && d[2] <= CacheRatioMax
}

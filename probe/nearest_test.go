package probe

import (
	"math"
	"testing"
)

// ParseClass reads back every class Class writes: its parts are the profile's, and String writes the
// class again.
func TestParseClassRoundTrip(t *testing.T) {
	caches := func(sizes ...int) []Cache {
		var cs []Cache
		for i, s := range sizes {
			cs = append(cs, Cache{Level: i + 1, Size: s})
		}
		return cs
	}
	for _, p := range []Profile{
		{GOARCH: "amd64", ISA: "avx512bf16", Cores: 2, Caches: caches(48<<10, 2<<20, 105<<20)},
		{GOARCH: "amd64", ISA: "avx512", Cores: 128, Caches: caches(32<<10, 1<<20)},
		{GOARCH: "amd64", ISA: "avx2", Cores: 1, Caches: caches(32<<10, 1536<<10, 30<<20)},
		{GOARCH: "amd64", ISA: "go", Cores: 3, Caches: caches(12345, 3<<20+1)},
		{GOARCH: "arm64", ISA: "neon", Cores: 8, Caches: caches(64<<10, 4<<20)},
		{GOARCH: "arm64", ISA: "neon", Cores: 10, Caches: caches(128 << 10)},
		{GOARCH: "arm64", ISA: "go", Cores: 0},
		{GOARCH: "riscv64", ISA: "go", Cores: 4, Caches: caches(1023, 1025)},
		*Static(),
	} {
		c := p.Class()
		got, err := ParseClass(c)
		if err != nil {
			t.Errorf("ParseClass(%q): %v", c, err)
			continue
		}
		want := ClassParts{Arch: p.GOARCH, ISA: p.ISA, Cores: p.Cores}
		for _, k := range p.Caches {
			switch k.Level {
			case 1:
				want.L1 = k.Size
			case 2:
				want.L2 = k.Size
			}
		}
		if got != want {
			t.Errorf("ParseClass(%q) = %+v, want %+v", c, got, want)
		}
		if s := got.String(); s != c {
			t.Errorf("ParseClass(%q).String() = %q", c, s)
		}
	}
}

func TestParseClassErrors(t *testing.T) {
	for _, c := range []string{"", "amd64", "amd64-avx2", "amd64-avx2-4", "amd64-avx2-cx", "amd64-avx2-c-1",
		"-avx2-c4", "amd64-avx2-c4-l3_8M", "amd64-avx2-c4-l2_1M-l1_32K", "amd64-avx2-c4-l1_32K-l1_32K",
		"amd64-avx2-c4-l1_", "amd64-avx2-c4-l1_32G", "amd64-avx2-c4-l1_0", "amd64-avx2-c4-l132K", "other-class"} {
		if p, err := ParseClass(c); err == nil {
			t.Errorf("ParseClass(%q) = %+v, want an error", c, p)
		}
	}
}

func TestNearest(t *testing.T) {
	const host = "amd64-avx512-c8-l1_48K-l2_2M"
	for _, tc := range []struct {
		name    string
		classes []string
		want    string
	}{
		{"exact match wins", []string{"amd64-avx512-c8-l1_48K-l2_1M", host, "amd64-avx512-c16-l1_48K-l2_2M"}, host},
		{"none", nil, ""},
		{"another ISA is never chosen", []string{"amd64-avx512bf16-c8-l1_48K-l2_2M", "amd64-avx2-c8-l1_48K-l2_2M", "arm64-avx512-c8-l1_48K-l2_2M"}, ""},
		{"another ISA loses to a far class", []string{"amd64-avx2-c8-l1_48K-l2_2M", "amd64-avx512-c1-l1_32K-l2_32M"}, "amd64-avx512-c1-l1_32K-l2_32M"},
		{"L2 nearer wins over cores nearer", []string{"amd64-avx512-c8-l1_48K-l2_1M", "amd64-avx512-c64-l1_48K-l2_2M"}, "amd64-avx512-c64-l1_48K-l2_2M"},
		{"L2 nearer wins over L1 nearer", []string{"amd64-avx512-c8-l1_48K-l2_8M", "amd64-avx512-c8-l1_32K-l2_4M"}, "amd64-avx512-c8-l1_32K-l2_4M"},
		{"L1 nearer wins over cores nearer", []string{"amd64-avx512-c8-l1_32K-l2_2M", "amd64-avx512-c2-l1_48K-l2_2M"}, "amd64-avx512-c2-l1_48K-l2_2M"},
		{"ratios, not differences", []string{"amd64-avx512-c8-l1_48K-l2_1M", "amd64-avx512-c8-l1_48K-l2_3M"}, "amd64-avx512-c8-l1_48K-l2_3M"},
		{"cores decide last", []string{"amd64-avx512-c2-l1_48K-l2_4M", "amd64-avx512-c16-l1_48K-l2_4M", "amd64-avx512-c32-l1_48K-l2_4M"}, "amd64-avx512-c16-l1_48K-l2_4M"},
		{"a tie goes to the smaller string", []string{"amd64-avx512-c4-l1_48K-l2_2M", "amd64-avx512-c16-l1_48K-l2_2M"}, "amd64-avx512-c16-l1_48K-l2_2M"},
		{"a named level beats a missing one", []string{"amd64-avx512-c8", "amd64-avx512-c8-l1_48K-l2_64M"}, "amd64-avx512-c8-l1_48K-l2_64M"},
		{"unparsable classes are skipped", []string{"c", "other-class", "amd64-avx512-c1-l1_48K-l2_2M"}, "amd64-avx512-c1-l1_48K-l2_2M"},
	} {
		if got := Nearest(host, tc.classes); got != tc.want {
			t.Errorf("%s: Nearest = %q, want %q", tc.name, got, tc.want)
		}
		// The choice does not depend on the order of the table.
		rev := append([]string(nil), tc.classes...)
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		if got := Nearest(host, rev); got != tc.want {
			t.Errorf("%s (reversed): Nearest = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := Nearest("c", []string{"b", "c"}); got != "c" {
		t.Errorf("an unparsable host: Nearest = %q, want its exact match", got)
	}
	if got := Nearest("c", []string{"amd64-avx512-c8-l1_48K-l2_2M"}); got != "" {
		t.Errorf("an unparsable host: Nearest = %q, want none", got)
	}
}

func TestClassDistance(t *testing.T) {
	a, _ := ParseClass("amd64-avx2-c4-l1_32K-l2_1M")
	b, _ := ParseClass("amd64-avx2-c16-l1_64K-l2_256K")
	if d, want := ClassDistance(a, b), (Distance{0, 2, 1, 2}); d != want {
		t.Errorf("ClassDistance = %v, want %v", d, want)
	}
	if d := ClassDistance(a, a); d != (Distance{}) {
		t.Errorf("ClassDistance to itself = %v", d)
	}
	b.ISA = "avx512"
	if d := ClassDistance(a, b); !math.IsInf(d[0], 1) {
		t.Errorf("ClassDistance across ISAs = %v", d)
	}
}

// NearestHost takes $KGEN_MACHINE_CLASS over the host's class.
func TestNearestHostEnv(t *testing.T) {
	classes := []string{"amd64-avx2-c4-l1_32K-l2_1M", "amd64-avx2-c4-l1_32K-l2_8M"}
	t.Setenv(ClassEnv, "amd64-avx2-c64-l1_48K-l2_4M")
	if got := NearestHost(classes); got != classes[1] {
		t.Errorf("NearestHost = %q, want %q", got, classes[1])
	}
	t.Setenv(ClassEnv, "")
	if got, want := NearestHost([]string{HostClass()}), HostClass(); got != want {
		t.Errorf("NearestHost = %q, want the host's class %q", got, want)
	}
}

// Cache blocks transfer between classes whose L1 and L2 are within a factor √2; thresholds are not
// asked about here.
func TestCachesMatch(t *testing.T) {
	const host = "amd64-avx512-c2-l1_48K-l2_1M"
	for _, tc := range []struct {
		class string
		want  bool
	}{
		{host, true},
		{"amd64-avx512-c64-l1_48K-l2_1M", true},   // cores do not matter
		{"amd64-avx512-c2-l1_48K-l2_1280K", true}, // 1.25 MiB: log2 1.25 = 0.32
		{"amd64-avx512-c2-l1_32K-l2_1M", false},   // L1 48/32 = 1.5: |log2| 0.58
		{"amd64-avx512-c2-l1_48K-l2_2M", false},   // the Xeon's L2 against a Zen 5's
		{"amd64-avx512-c2-l1_48K-l2_512K", false},
		{"amd64-avx2-c2-l1_48K-l2_1M", false}, // another vector level
		{"amd64-avx512-c2", false},            // names no caches
		{"garbage", false},
	} {
		if got := CachesMatch(host, tc.class); got != tc.want {
			t.Errorf("CachesMatch(%s, %s) = %v, want %v", host, tc.class, got, tc.want)
		}
	}
	if CachesMatch("amd64-avx512-c2", "amd64-avx512-c2") != true || CachesMatch("", "") {
		t.Errorf("a class matches itself, even one naming no caches; \"\" matches nothing")
	}
	t.Setenv(ClassEnv, host)
	if got := MatchingCaches("amd64-avx512-c8-l1_48K-l2_1M"); got != "amd64-avx512-c8-l1_48K-l2_1M" {
		t.Errorf("MatchingCaches = %q, want the class (same caches as the played host)", got)
	}
	if got := MatchingCaches("amd64-avx512-c2-l1_48K-l2_2M"); got != "" {
		t.Errorf("MatchingCaches = %q, want \"\" (L2 twice the played host's)", got)
	}
}

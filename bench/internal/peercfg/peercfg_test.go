package peercfg

import (
	"strings"
	"testing"
)

// blis090 is what bli_arch_string(0..) names in BLIS 0.9.0 (blis.h arch_t).
var blis090 = []string{"skx", "knl", "knc", "haswell", "sandybridge", "penryn", "zen3", "zen2", "zen",
	"excavator", "steamroller", "piledriver", "bulldozer", "armsve", "a64fx", "firestorm", "thunderx2",
	"cortexa57", "cortexa53", "cortexa15", "cortexa9", "power10", "power9", "power7", "bgq", "generic"}

var (
	zen5 = CPU{Vendor: "AMD", Family: 26, Model: 2, SSE3: true, SSSE3: true, AVX: true, AVX2: true, FMA: true,
		AVX512F: true, AVX512DQ: true, AVX512BW: true, AVX512VL: true, AVX512BF16: true}
	zen3 = CPU{Vendor: "AMD", Family: 0x19, Model: 0x01, SSE3: true, SSSE3: true, AVX: true, AVX2: true, FMA: true}
	spr  = CPU{Vendor: "Intel", Family: 6, Model: 207, SSE3: true, SSSE3: true, AVX: true, AVX2: true, FMA: true,
		AVX512F: true, AVX512DQ: true, AVX512BW: true, AVX512VL: true, AVX512BF16: true}
	hsw = CPU{Vendor: "Intel", Family: 6, Model: 63, SSE3: true, SSSE3: true, AVX: true, AVX2: true, FMA: true}
	old = CPU{Vendor: "Intel", Family: 6, Model: 23, SSE3: true}
)

func names(cs []Choice) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Name)
	}
	return strings.Join(s, ",")
}

func TestZen(t *testing.T) {
	for c, want := range map[CPU]int{
		{Vendor: "AMD", Family: 0x17, Model: 0x01}: 1, {Vendor: "AMD", Family: 0x17, Model: 0x31}: 2,
		{Vendor: "AMD", Family: 0x19, Model: 0x01}: 3, {Vendor: "AMD", Family: 0x19, Model: 0x21}: 3,
		{Vendor: "AMD", Family: 0x19, Model: 0x11}: 4, {Vendor: "AMD", Family: 0x19, Model: 0x61}: 4,
		{Vendor: "AMD", Family: 26, Model: 2}: 5, {Vendor: "Intel", Family: 26}: 0, {Vendor: "AMD", Family: 0x15}: 0,
	} {
		if got := c.Zen(); got != want {
			t.Errorf("%+v: Zen %d, want %d", c, got, want)
		}
	}
}

func TestBLIS(t *testing.T) {
	for _, c := range []struct {
		name     string
		cpu      CPU
		detected string
		archs    []string
		want     string // candidate names, best first
		ids      []int
		why      string // a substring of the first candidate's reason
	}{
		// The case of issue 14: BLIS 0.9.0 on a Zen 5 runs "generic"; it has no zen4/zen5.
		{"zen5 on 0.9.0", zen5, "generic", blis090, "skx,zen3,zen2,zen,haswell,sandybridge,penryn", []int{0, 6, 7, 8, 3, 4, 5}, "no zen5/zen4 configuration"},
		// A BLIS that knows Zen 4/5 (names appended as a later release might).
		{"zen5 on a newer BLIS", zen5, "generic", append(append([]string{}, blis090[:25]...), "zen4", "zen5", "generic"), "zen5,zen4,skx,zen3,zen2,zen,haswell,sandybridge,penryn", nil, `detected "generic"`},
		// BLIS detected haswell on the Sapphire Rapids Xeon: skx is better, and the fall-backs stop at haswell.
		{"xeon", spr, "haswell", blis090, "skx", []int{0}, "AVX-512 F/DQ/BW/VL"},
		// Detected its best itself: leave it.
		{"zen3 detected", zen3, "zen3", blis090, "", nil, ""},
		{"haswell detected", hsw, "haswell", blis090, "", nil, ""},
		{"zen3 as generic", zen3, "generic", blis090, "zen3,zen2,zen,haswell,sandybridge,penryn", nil, "AVX2+FMA"},
		{"sse3 only", old, "generic", blis090, "penryn", []int{5}, "SSE3"},
		// A library that names nothing we know.
		{"no names", zen5, "generic", nil, "", nil, ""},
	} {
		got := BLIS(c.cpu, c.detected, c.archs)
		if names(got) != c.want {
			t.Errorf("%s: %q, want %q", c.name, names(got), c.want)
			continue
		}
		for i, id := range c.ids {
			if got[i].ID != id {
				t.Errorf("%s: %s has id %d, want %d", c.name, got[i].Name, got[i].ID, id)
			}
		}
		if c.why != "" && !strings.Contains(got[0].Why, c.why) {
			t.Errorf("%s: reason %q lacks %q", c.name, got[0].Why, c.why)
		}
	}
}

func TestOpenBLAS(t *testing.T) {
	for _, c := range []struct {
		name, detected, want string
		cpu                  CPU
	}{
		{"zen5", "Zen", "SkylakeX", zen5},
		{"xeon prescott", "Prescott", "SkylakeX", spr},
		{"xeon cooperlake", "Cooperlake", "", spr},
		{"xeon skylakex", "SkylakeX", "", spr},
		{"zen3 haswell", "Haswell", "Zen", zen3},
		{"zen3 zen", "Zen", "", zen3},
		{"haswell", "Prescott", "Haswell", hsw},
		{"sse3", "Prescott", "", old},
	} {
		ch, ok := OpenBLAS(c.cpu, c.detected)
		if ok != (c.want != "") || ch.Name != c.want {
			t.Errorf("%s: %+v %v, want %q", c.name, ch, ok, c.want)
		}
		if ok && !strings.Contains(ch.Why, c.detected) {
			t.Errorf("%s: reason %q does not name the detected core", c.name, ch.Why)
		}
	}
}

func TestParseCPUInfo(t *testing.T) {
	in := "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n" +
		"processor\t: 1\nvendor_id\t: GenuineIntel\n"
	v, f, m := parseCPUInfo(strings.NewReader(in))
	if v != "AMD" || f != 26 || m != 2 {
		t.Errorf("%q %d %d", v, f, m)
	}
	if v, _, _ := parseCPUInfo(strings.NewReader("vendor_id : GenuineIntel\n")); v != "Intel" {
		t.Errorf("intel: %q", v)
	}
}

// Held to AVX2 (kgen-bench -isa avx2), a Zen 5 gets the peers' AVX2 kernels
// as a Zen 3 would, whatever they detect; held to AVX-512 it keeps skx.
func TestCap(t *testing.T) {
	c, err := zen5.Cap("avx2")
	if err != nil || c.AVX512() || c.AVX512BF16 || !c.AVX2 || c.ISA() != "AVX2+FMA" {
		t.Fatalf("zen5 held to avx2: %+v %v", c, err)
	}
	for _, detected := range []string{"Cooperlake", "SkylakeX", "Haswell"} {
		if ch, ok := OpenBLAS(c, detected); !ok || ch.Name != "Zen" {
			t.Errorf("openblas detected %s, held to avx2: %+v %v, want Zen", detected, ch, ok)
		}
	}
	for _, detected := range []string{"generic", "skx"} {
		if got := names(BLIS(c, detected, blis090)); got != "zen3,zen2,zen,haswell,sandybridge,penryn" {
			t.Errorf("blis detected %s, held to avx2: %s", detected, got)
		}
	}
	if got := names(BLIS(c, "zen3", blis090)); got != "" {
		t.Errorf("blis detected zen3, held to avx2: %q, want nothing forced", got)
	}
	if c, err := spr.Cap("avx512"); err != nil || !c.AVX512() || c.AVX512BF16 {
		t.Errorf("spr held to avx512: %+v %v", c, err)
	}
	if c, err := zen5.Cap(""); err != nil || c != zen5 {
		t.Errorf("no cap changed the CPU: %+v %v", c, err)
	}
	for _, bad := range []struct {
		cpu CPU
		isa string
	}{{zen3, "avx512"}, {old, "avx2"}, {zen5, "sse9"}} {
		if _, err := bad.cpu.Cap(bad.isa); err == nil {
			t.Errorf("%s on %s accepted", bad.isa, bad.cpu.ISA())
		}
	}
}

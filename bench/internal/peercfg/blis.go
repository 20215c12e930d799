package peercfg

import (
	"fmt"
	"strings"
)

// Choice is a configuration to force on a peer, with the reason.
type Choice struct {
	Name string // the library's name for it: "skx", "SkylakeX"
	ID   int    // BLIS: the arch_t number for BLIS_ARCH_TYPE; -1 for OpenBLAS
	Why  string
}

// blisPrefs lists BLIS configurations, best first, for this CPU: the
// AVX-512 ones (AMD's newer configurations first on AMD, as they are tuned
// for its caches; skx otherwise), then AVX2+FMA ones, AVX, SSE3. Names are
// those of bli_arch_string.
func blisPrefs(c CPU) []string {
	var p []string
	zen := c.Zen()
	if c.AVX512() {
		if zen >= 5 {
			p = append(p, "zen5")
		}
		if zen >= 4 {
			p = append(p, "zen4")
		}
		p = append(p, "skx")
	}
	if c.AVX2 && c.FMA {
		if c.Vendor == "AMD" {
			switch {
			case zen >= 3:
				p = append(p, "zen3", "zen2", "zen")
			case zen == 2:
				p = append(p, "zen2", "zen")
			default:
				p = append(p, "zen")
			}
		}
		p = append(p, "haswell")
	}
	if c.AVX {
		p = append(p, "sandybridge")
	}
	if c.SSSE3 || c.SSE3 {
		p = append(p, "penryn")
	}
	return p
}

// BLIS returns the BLIS configurations to try, best first, among those the
// library names (archs[i] is bli_arch_string(i)), for a CPU on which BLIS
// detected detected. The first candidate is the one to force; the others
// are fall-backs should the library lack its kernels (a configuration may
// be named but not compiled in). The list is empty when nothing better
// than what BLIS detected is available (then BLIS is left to detect).
func BLIS(c CPU, detected string, archs []string) []Choice {
	index := map[string]int{}
	for i, a := range archs {
		index[strings.ToLower(a)] = i
	}
	prefs := blisPrefs(c)
	var missing []string
	var out []Choice
	for _, name := range prefs {
		id, ok := index[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		if name == strings.ToLower(detected) {
			if len(out) == 0 { // BLIS detected its best configuration itself
				return nil
			}
			break
		}
		why := fmt.Sprintf("the CPU has %s; BLIS detected %q", c.ISA(), detected)
		if len(missing) > 0 && len(out) == 0 {
			why += "; this BLIS has no " + strings.Join(missing, "/") + " configuration"
		}
		out = append(out, Choice{Name: name, ID: id, Why: why})
	}
	return out
}

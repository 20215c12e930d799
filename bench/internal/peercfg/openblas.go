package peercfg

import "fmt"

// OpenBLAS returns the OPENBLAS_CORETYPE to force for sgemm/dgemm on this
// CPU, given the core OpenBLAS detected, or ok = false when it detected the
// best one itself or the CPU has nothing a forced core would improve on.
// AVX-512 F/DQ/BW/VL: SkylakeX (the cores built on it, Cooperlake and
// SapphireRapids, run the same sgemm/dgemm kernels and only add bf16 ones,
// and an older OpenBLAS may not know them); AVX2+FMA: Zen on AMD, Haswell
// otherwise; AVX: Sandybridge.
func OpenBLAS(c CPU, detected string) (ch Choice, ok bool) {
	var name string
	switch {
	case c.AVX512():
		name = "SkylakeX"
		switch detected {
		case "SkylakeX", "Cooperlake", "SapphireRapids":
			return Choice{}, false
		}
	case c.AVX2 && c.FMA && c.Vendor == "AMD":
		name = "Zen"
	case c.AVX2 && c.FMA:
		name = "Haswell"
	case c.AVX:
		name = "Sandybridge"
	default:
		return Choice{}, false
	}
	if detected == name {
		return Choice{}, false
	}
	return Choice{Name: name, ID: -1, Why: fmt.Sprintf("the CPU has %s; OpenBLAS detected %q", c.ISA(), detected)}, true
}

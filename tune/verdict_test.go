package tune

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

// pairs returns n paired times whose ratios incumbent/candidate are the given ones.
func pairs(ratios ...float64) (ta, tb []float64) {
	for _, r := range ratios {
		ta, tb = append(ta, 100*r), append(tb, 100)
	}
	return ta, tb
}

// The decision rule: a candidate wins when it is faster beyond noise on some shape (all but one of the
// paired ratios above 1), slower on none (at most pairs-3 ratios below 1), and not slower on average.
func TestVerdict(t *testing.T) {
	even := []float64{0.98, 1.02, 0.99, 1.01, 1.00, 0.97, 1.03, 1.00}
	faster := []float64{1.10, 1.12, 0.99, 1.08, 1.11, 1.09, 1.10, 1.13}
	slower := []float64{0.90, 0.95, 1.01, 0.92, 0.94, 0.97, 1.02, 0.93}
	noisy := []float64{1.5, 0.6, 1.4, 0.7, 1.6, 0.8, 1.3, 0.9}
	for _, tc := range []struct {
		name   string
		shapes [][]float64
		win    bool
		faster []string
	}{
		{"faster on one, even on the other", [][]float64{faster, even}, true, []string{"s0"}},
		{"even everywhere", [][]float64{even, even}, false, nil},
		{"faster on one, slower on another", [][]float64{faster, slower}, false, []string{"s0"}},
		{"noise only", [][]float64{noisy, noisy}, false, nil},
		{"one bad pair is allowed", [][]float64{{1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 0.5}}, true, []string{"s0"}},
		{"two bad pairs are not", [][]float64{{1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 0.5, 0.5}}, false, nil},
	} {
		var v verdict
		for i, r := range tc.shapes {
			ta, tb := pairs(r...)
			v.add("s"+string(rune('0'+i)), ta, tb)
		}
		v.finish()
		if v.win != tc.win || !slices.Equal(v.faster, tc.faster) {
			t.Errorf("%s: win %v faster %v, want %v %v", tc.name, v.win, v.faster, tc.win, tc.faster)
		}
		if math.IsNaN(v.speedup) || v.speedup <= 0 || v.noise < 0 {
			t.Errorf("%s: speedup %v noise %v", tc.name, v.speedup, v.noise)
		}
	}
}

// TestStartFor: starting values keep the slots' run-time fields, and their kernel fields become the
// microkernel candidate with exactly those fields; a combination no candidate has is dropped.
func TestStartFor(t *testing.T) {
	cands := map[string][]map[string]int{"sgemm": {{"MR": 13}, {"MR": 12}, {"PFU": 16}}}
	start := map[string]int{"sgemm.KC": 512, "sgemm.MR": 12, "other.KC": 64}
	got, dropped := startFor(start, []string{"sgemm"}, cands)
	if want := map[string]int{"sgemm.KC": 512, "sgemm.Kernel": 2}; !maps.Equal(got, want) || len(dropped) != 0 {
		t.Errorf("startFor = %v, dropped %v; want %v, none", got, dropped, want)
	}
	got, dropped = startFor(map[string]int{"sgemm.MR": 12, "sgemm.PFU": 16}, []string{"sgemm"}, cands)
	if len(got) != 0 || len(dropped) != 1 || !strings.Contains(dropped[0], "sgemm: MR=12 PFU=16") {
		t.Errorf("two kernel fields: startFor = %v, dropped %v; want nothing, one dropped", got, dropped)
	}
}

package passes

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// scheduleKernels are statements that no pass tensorizes, so that tile works on their point loops.
const scheduleKernels = `kernel add2(X: f32[M, N], Y: f32[M, N], Z: out f32[M, N]) {
    Z[i, j] = X[i, j] * 2 + Y[i, j]
}
kernel mv(A: f32[M, N], x: f32[N], y: out f32[M]) {
    y[i] = sum(j: A[i, j] * x[j])
}
kernel maxplus(A: f32[Bt, M, K], B: f32[Bt, K, N], O: out f32[Bt, M, N]) {
    O[b, i, j] = max(k: A[b, i, k] + B[b, k, j])
}
`

// TestScheduleEquivalence compiles kernels with tile (on point loops, one and two levels, sizes that do
// not divide the shapes), reorder and unroll directives, alone and combined, for every CPU target; it
// checks that each directive changed the loop IR as it says (want), and that the interpreted result
// after every pass equals the algorithm level's on ragged shapes (ones, primes, sizes past a tile).
func TestScheduleEquivalence(t *testing.T) {
	cases := []struct {
		kernel, sched string
		want          []string // in the final IR
	}{
		{"add2", "tile i 4, j 8", []string{"for it = 0 .. M step 4", "for jt = 0 .. N step 8"}},
		{"add2", "tile i 16 4, j 6", []string{"for it = 0 .. M step 16", "for it2 = it .. min((it + 16), M) step 4"}},
		{"add2", "reorder j, i", []string{"parallel j = 0 .. N step 1\n      vector<4> i"}},
		{"add2", "reorder j, i\n    tile i 16 4, j 6", []string{"for jt = 0 .. N step 6\n      for it = 0 .. M step 16"}},
		{"add2", "unroll j 3", []string{"unrolled<3> j"}},
		{"add2", "unroll j 4\n    tile i 5", []string{"unrolled<4> j", "for it = 0 .. M step 5"}},
		{"mv", "tile i 5", []string{"for it = 0 .. M step 5"}},
		{"mv", "unroll j 3", []string{"unrolled<3> j"}},
		{"mv", "tile i 6 3\n    unroll j 2", []string{"for it2 = it .. min((it + 6), M) step 3", "unrolled<2> j"}},
		{"maxplus", "reorder j, i, b", []string{"parallel j = 0 .. N step 1\n      for i = 0 .. M step 1\n        for b = 0 .. Bt step 1"}},
		{"maxplus", "tile i 4, j 3\n    unroll k 2", []string{"for it = 0 .. M step 4", "for jt = 0 .. N step 3", "unrolled<2> k"}},
		{"maxplus", "reorder i, b, j\n    tile b 2", []string{"for i = 0 .. M step 1"}},
	}
	for _, c := range cases {
		src := scheduleKernels + "schedule " + c.kernel + " {\n    " + c.sched + "\n}\n"
		ks, err := check.File("sched.kdsl", src)
		if err != nil {
			t.Fatalf("%s {%s}: %v", c.kernel, c.sched, err)
		}
		var k *ir.Kernel
		for _, x := range ks {
			if x.Name == c.kernel {
				k = x
			}
		}
		for _, tgt := range []string{"go", "amd64", "arm64"} {
			m, _ := target.Lookup(tgt)
			plain := *k
			plain.Schedule = nil
			base, err := Compile(&plain, m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			names := Names(m)
			rng := rand.New(rand.NewPCG(11, uint64(len(c.sched))))
			shapes := kgentest.Shapes(k, rng, 3)
			shapes = append(shapes, map[string]int{"M": 17, "N": 13, "K": 7, "Bt": 3})
			for upto := range names {
				f, err := Compile(k, m, Options{Skip: names[upto+1:]})
				if err != nil {
					t.Fatalf("%s {%s} for %s up to %s: %v", c.kernel, c.sched, tgt, names[upto], err)
				}
				if upto == len(names)-1 {
					ir := f.String()
					if ir == base.String() {
						t.Errorf("%s {%s} for %s: the schedule changed nothing", c.kernel, c.sched, tgt)
					}
					for _, w := range c.want {
						if tgt == "amd64" {
							w = strings.ReplaceAll(w, "vector<4>", "vector<8>")
						}
						if !strings.Contains(ir, w) {
							t.Errorf("%s {%s} for %s: no %q in\n%s", c.kernel, c.sched, tgt, w, ir)
						}
					}
				}
				runEquiv(t, fmt.Sprintf("%s {%s} for %s after %s", c.kernel, c.sched, tgt, names[upto]), k, f, shapes, rng)
			}
		}
	}
}

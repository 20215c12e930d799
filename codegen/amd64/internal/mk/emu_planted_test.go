//go:build amd64 && !purego

package mk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64/emu"
)

// TestEmuPlantedBugs shows that the emulated differential check catches real
// AVX-512 bugs on any CPU: it plants bugs in the text of the AVX-512 kernels
// (the f64 bias once loaded with VMOVUPS under an 8-bit opmask, and
// off-by-one column opmasks), runs the mutated kernels in the interpreter
// and requires the check to fail, while the unmutated text passes.
func TestEmuPlantedBugs(t *testing.T) {
	raw, err := os.ReadFile("mk_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	src := string(raw)
	for _, c := range []struct {
		what, kernel, old, new string
	}{
		{"f64 bias loaded with VMOVUPS (16 f32 lanes per opmask)", "dgemm14x16AVX512", "VMOVUPD.Z (R12), K1, Z0", "VMOVUPS.Z (R12), K1, Z0"},
		{"second column opmask shifted by NR/2-1 (one column too many)", "dgemm14x16AVX512", "SHRQ  $0x08, AX", "SHRQ  $0x07, AX"},
		{"second column opmask shifted by NR/2-1 (one column too many)", "sgemm14x32AVX512", "SHRQ  $0x10, AX", "SHRQ  $0x0f, AX"},
		{"column opmask (1<<n) instead of (1<<n)-1", "sgemm14x32AVX512", "DECQ  AX\n\tKMOVW AX, K1", "KMOVW AX, K1"},
	} {
		t.Run(c.kernel+"/"+c.what, func(t *testing.T) {
			mutated, err := plant(src, c.kernel, c.old, c.new)
			if err != nil {
				t.Fatal(err)
			}
			if bad := emulatedDiff(t, src, c.kernel); len(bad) > 0 {
				t.Fatalf("the unmutated %s fails the emulated check: %s", c.kernel, bad[0])
			}
			bad := emulatedDiff(t, mutated, c.kernel)
			if len(bad) == 0 {
				t.Fatalf("planted bug in %s (%q -> %q) not caught", c.kernel, c.old, c.new)
			}
			t.Logf("caught: %d failing checks, e.g. %s", len(bad), bad[0])
		})
	}
}

// plant replaces the single occurrence of old in the TEXT block of kernel.
func plant(src, kernel, old, new string) (string, error) {
	head := "TEXT ·" + kernel + "(SB)"
	i := strings.Index(src, head)
	if i < 0 {
		return "", fmt.Errorf("no %s", head)
	}
	end := len(src)
	if j := strings.Index(src[i+len(head):], "\nTEXT "); j >= 0 {
		end = i + len(head) + j
	}
	body := src[i:end]
	if n := strings.Count(body, old); n != 1 {
		return "", fmt.Errorf("%q occurs %d times in %s (want once)", old, n, kernel)
	}
	return src[:i] + strings.Replace(body, old, new, 1) + src[end:], nil
}

// emulatedDiff runs kernel of the assembly text in the interpreter over edge
// shapes (every m and n, kc 0, 1, 5, each epilogue, beta zero and not) and
// returns the failed checks: wrong elements, writes outside the tile, or
// emulation errors (accesses outside the operands).
func emulatedDiff(t *testing.T, text, kernel string) []string {
	t.Helper()
	p, err := emu.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	m := p.Machine()
	m.OnError(func(err error) { bad = append(bad, err.Error()) })
	switch kernel {
	case "sgemm14x32AVX512":
		return edgeSweep(t, m, f32Kernels, kernel, &bad)
	case "dgemm14x16AVX512":
		return edgeSweep(t, m, f64Kernels, kernel, &bad)
	}
	t.Fatalf("no table entry for %s", kernel)
	return nil
}

func edgeSweep[T float](t *testing.T, m *emu.Machine, table []kernel[T], name string, bad *[]string) []string {
	t.Helper()
	var k kernel[T]
	for _, e := range table {
		if e.name == name {
			k = e
		}
	}
	fn, err := emu.Func[kernFunc[T]](m, name)
	if err != nil {
		t.Fatal(err)
	}
	k.fn, k.bind = fn, m.SetRegions
	rng := rand.New(rand.NewPCG(5, 6))
	for mm := 1; mm <= k.mr; mm++ {
		for n := 1; n <= k.nr; n++ {
			for _, kc := range []int{0, 1, 5} {
				p := newProblem[T](rng, k.mr, k.nr, kc, mm, n, n+rng.IntN(3))
				p.ep = (mm + n + kc) % 4
				if (mm*n+kc)%3 == 0 {
					p.beta = 0
					for i := 0; i < mm; i++ {
						for j := 0; j < n; j++ {
							p.c0[i*p.ldc+j] = T(math.NaN())
						}
					}
				}
				*bad = append(*bad, p.verify(name, p.run(k, nil, nil))...)
			}
		}
	}
	return *bad
}

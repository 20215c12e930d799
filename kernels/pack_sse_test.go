//go:build amd64 && !purego

package kernels

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestNoLegacySSE: no routine of the generated assembly uses a legacy (non-VEX) SSE instruction on an
// X register. Mixed with the AVX/AVX-512 code around it, each such instruction costs Intel cores a
// state transition: packPBf32AVX2 with MOVSS in its tail packed sgemm_tt's 14-float A panels 77×
// slower than 16-float ones on a Sapphire Rapids Xeon (BenchmarkPackPB below; docs/PERF.md).
func TestNoLegacySSE(t *testing.T) {
	f, err := os.Open("kgen_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	xreg := regexp.MustCompile(`(^|[ ,(])X[0-9]+\b`)
	routine, n, routines := "", 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		n++
		if strings.HasPrefix(line, "TEXT ") {
			routine = strings.Fields(line)[1]
			routines++
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || strings.HasSuffix(fields[0], ":") {
			continue
		}
		op, args := fields[0], strings.Join(fields[1:], " ")
		if strings.HasPrefix(op, "V") || strings.HasPrefix(op, "K") || !xreg.MatchString(" "+args) {
			continue
		}
		t.Errorf("kgen_amd64.s:%d: %s uses the legacy SSE instruction %q: use its VEX form", n, routine, strings.TrimSpace(line))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if routines < 10 {
		t.Fatalf("read %d routines from kgen_amd64.s: not the generated file?", routines)
	}
}

// TestPackPBPanelRuns checks the generated packPB routines for the panel-by-panel copy (codegen/amd64
// pack.go, packPBRows): a loop for 128-byte and one for 64-byte panels that loads a whole panel row,
// stores it, and steps the destination by the panel's width, so that a chunk of source rows lands as
// one contiguous run of each panel. The row-by-row order it replaced (each source row scattered over
// all the panels, a panel's depth apart) packed dgemm's 4 MiB B̃ block at a third of the speed
// (BenchmarkPackPB/f64-1024x512-panel16: 13 against 25 GiB/s on the Zen 5; docs/PERF.md, session 16).
func TestPackPBPanelRuns(t *testing.T) {
	src, err := os.ReadFile("kgen_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	load := regexp.MustCompile(`^VMOVUPS (-?\d*)\((R\w+)\), Y\d+$`)
	store := regexp.MustCompile(`^VMOVUPS Y\d+, (-?\d*)\((R\w+)\)$`)
	for _, routine := range []string{"packPBf32AVX2", "packPBf64AVX2"} {
		for _, width := range []int{128, 64} {
			label := fmt.Sprintf("%s_r%d", routine, width)
			start := slices.Index(lines, label+":")
			if start < 0 {
				t.Errorf("%s: no loop %s (the panel-run copy of %d-byte panels)", routine, label, width)
				continue
			}
			loads, stores, base, step := 0, 0, "", false
			for _, l := range lines[start+1:] {
				f := strings.Join(strings.Fields(l), " ")
				if f == "JNZ "+label {
					break
				}
				if m := load.FindStringSubmatch(f); m != nil {
					loads++
				}
				if m := store.FindStringSubmatch(f); m != nil {
					stores++
					base = m[2]
				}
				if base != "" && f == fmt.Sprintf("ADDQ $0x%02x, %s", width, base) {
					step = true
				}
				if strings.HasSuffix(f, ":") || strings.HasPrefix(f, "RET") {
					t.Fatalf("%s: loop %s has no JNZ back to it", routine, label)
				}
			}
			if loads != width/32 || stores != width/32 || !step {
				t.Errorf("%s: loop %s: %d 32-byte loads, %d stores (want %d each), destination stepped by %d bytes: %v",
					routine, label, loads, stores, width/32, width, step)
			}
		}
	}
}

// BenchmarkPackPB packs a 256×256 block into panels of several widths (the A panels of a GEMM whose A
// is stored transposed, and every B panel): per element the widths should cost about the same.
func BenchmarkPackPB(b *testing.B) {
	const n, depth = 256, 256
	src := make([]float32, depth*n)
	for _, panel := range []int{8, 14, 16, 32} {
		dst := make([]float32, ((n+panel-1)/panel)*panel*depth)
		b.Run(fmt.Sprintf("panel%d", panel), func(b *testing.B) {
			b.ResetTimer()
			for range b.N {
				packPBf32AVX2(&dst[0], &src[0], n, n, panel, depth)
			}
		})
	}
	// dgemm's B̃ block on the AVX-512 variants (KC 512 × 1024 columns, 16-wide panels: 4 MiB, past the L2),
	// from four sources in turn so that the source is not in the L2 either.
	const bn, bdepth = 1024, 512
	bsrc := make([]float64, 4*bn*bdepth)
	bdst := make([]float64, bn*bdepth)
	b.Run("f64-1024x512-panel16", func(b *testing.B) {
		b.SetBytes(bn * bdepth * 8)
		b.ResetTimer()
		for i := range b.N {
			packPBf64AVX2(&bdst[0], &bsrc[(i%4)*bn*bdepth], bn, bn, 16, bdepth)
		}
	})
}

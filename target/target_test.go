package target

import (
	"testing"

	"github.com/kgen-dev/kgen/rt"
)

// The model on the AVX2 defaults (32 KiB 8-way L1, 1 MiB 16-way L2) for the 6×16 f32 tile, worked by
// hand: sets1 = 64, C_Ar = 7·6/22 = 1 way → KC = 1·64·64/(6·4) = 170 → 168, raised to MinKC = 256;
// MC = 14·1024·64/(256·4) = 896, halved and rounded to 6 → 444; NC = 16 MiB/(256·4) = 16384 → 4096.
func TestGemmBlocksWorked(t *testing.T) {
	m, _ := Lookup("amd64")
	b := GemmBlocks(m, 6, 16, 4)
	want := Blocks{MR: 6, NR: 16, MC: 444, KC: 256, NC: 4096}
	if b != want {
		t.Fatalf("got %+v, want %+v", b, want)
	}
	for _, name := range Names() {
		m, _ := Host(name)
		for _, tile := range [][2]int{{4, 4}, {6, 16}, {14, 32}, {8, 12}} {
			b := GemmBlocks(m, tile[0], tile[1], 4)
			if b.MC%b.MR != 0 || b.NC%b.NR != 0 || b.KC <= 0 {
				t.Errorf("%s %v: %+v not multiples", name, tile, b)
			}
		}
	}
}

// The table's parallel cut-off is the run time's default, and every CPU target has a portable variant
// last and tiles its generators can use (positive, NR a multiple of the variant's f32/f64 lanes).
func TestTableConsistent(t *testing.T) {
	for _, name := range Names() {
		m, _ := Lookup(name)
		if m.Knobs.MinParallelWork != rt.MinParallelWork {
			t.Errorf("%s: MinParallelWork %d, rt has %d", name, m.Knobs.MinParallelWork, rt.MinParallelWork)
		}
		if len(m.Variants) == 0 || m.Variants[len(m.Variants)-1].Name != "go" {
			t.Errorf("%s: variants %v do not end with the portable one", name, m.Variants)
		}
		for _, v := range m.Native() {
			elems := []int{4, 8}
			if v.Pairs {
				elems = []int{2}
			}
			for _, elem := range elems {
				mr, nr := v.Tile(elem)
				if lanes := v.VecBytes / max(elem, 4); mr < 1 || nr < lanes || nr%lanes != 0 {
					t.Errorf("%s/%s: tile %dx%d for %d-byte elements", name, v.Name, mr, nr, elem)
				}
			}
		}
		if p := m.Portable(); p.Name != "go" || p.Knobs != m.Knobs {
			t.Errorf("%s: portable model %+v", name, p)
		}
	}
}

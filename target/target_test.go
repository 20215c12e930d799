package target

import "testing"

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

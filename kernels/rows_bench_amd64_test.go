//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/cpu"
)

// BenchmarkRowsRatio calls the AVX-512 and the AVX2 f32 rows kernels directly (no GEMM driver around
// them), alternately, and reports each one's fastest call and the ratio avx2/avx512: B in L2 (256×512),
// in L3 (256×4096) and streamed from memory (4096×4096).
//
//	GOMAXPROCS=1 go test -run '^$' -bench RowsRatio -benchtime 200x ./kernels
func BenchmarkRowsRatio(b *testing.B) {
	if !cpu.X86.HasAVX512F {
		b.Skip("no AVX-512")
	}
	for _, sh := range [][3]int{{1, 256, 512}, {4, 256, 512}, {2, 256, 4096}, {4, 256, 4096}, {1, 4096, 4096}, {4, 4096, 4096}} {
		m, kc, n := sh[0], sh[1], sh[2]
		b.Run(fmt.Sprintf("m%d_kc%d_n%d", m, kc, n), func(b *testing.B) {
			a, bb, c := make([]float32, m*kc), make([]float32, kc*n), make([]float32, m*n)
			for i := range bb {
				bb[i] = float32(i % 7)
			}
			var mins [2]time.Duration
			b.ResetTimer()
			for range b.N {
				for i, f := range []func(){
					func() { sgemmRowsAVX512(kc, &a[0], kc, 1, &bb[0], n, &c[0], n, m, n) },
					func() { sgemmRowsAVX2(kc, &a[0], kc, 1, &bb[0], n, &c[0], n, m, n) },
				} {
					s := time.Now()
					f()
					if d := time.Since(s); mins[i] == 0 || d < mins[i] {
						mins[i] = d
					}
				}
			}
			b.ReportMetric(float64(mins[0].Nanoseconds()), "avx512-min-ns")
			b.ReportMetric(float64(mins[1].Nanoseconds()), "avx2-min-ns")
			b.ReportMetric(float64(mins[1])/float64(mins[0]), "avx2/avx512")
		})
	}
}

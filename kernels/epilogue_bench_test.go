package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// epilogueShapes are the GEMM+GELU benchmark's M×K×N: square layers and a skinny one (16 tokens through a
// 4096×4096 projection).
var epilogueShapes = [][3]int{{64, 64, 64}, {256, 256, 256}, {1024, 1024, 1024}, {16, 4096, 4096}}

func epilogueArgs(m, k, n int) (x, w, bias, y []float32) {
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return v
	}
	return fill(m * k), fill(k * n), fill(n), make([]float32, m*n)
}

// BenchmarkLinearGelu: the GEMM with its GELU epilogue fused (one call).
func BenchmarkLinearGelu(b *testing.B) {
	for _, s := range epilogueShapes {
		m, k, n := s[0], s[1], s[2]
		x, w, bias, y := epilogueArgs(m, k, n)
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			b.SetBytes(int64(2 * m * k * n)) // flops, reported as MB/s = MFLOP/s
			for b.Loop() {
				if err := LinearGelu(m, k, n, x, w, bias, y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGemmSigmoid: sigmoid(alpha·A·B + beta·C) with beta = 0, one sum in the statement (before the
// epilogue split it ran as a row-streaming vector loop, not through the microkernels).
func BenchmarkGemmSigmoid(b *testing.B) {
	for _, s := range epilogueShapes {
		m, k, n := s[0], s[1], s[2]
		x, w, _, y := epilogueArgs(m, k, n)
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			b.SetBytes(int64(2 * m * k * n))
			for b.Loop() {
				if err := GemmSigmoid(m, k, n, x, w, y, 1, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSgemmThenGelu: the same layer as two kernels, sgemm (bias added as beta·C over a broadcast
// copy is not the point: plain sgemm) and then an elementwise gelu over the result.
func BenchmarkSgemmThenGelu(b *testing.B) {
	for _, s := range epilogueShapes {
		m, k, n := s[0], s[1], s[2]
		x, w, _, y := epilogueArgs(m, k, n)
		z := make([]float32, m*n)
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			b.SetBytes(int64(2 * m * k * n))
			for b.Loop() {
				if err := Sgemm(m, k, n, x, w, y, 1, 0); err != nil {
					b.Fatal(err)
				}
				if err := Gelu(m*n, y, z); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSgemmPlain: sgemm alone on the same shapes, the speed the fused layer should come close to.
func BenchmarkSgemmPlain(b *testing.B) {
	for _, s := range epilogueShapes {
		m, k, n := s[0], s[1], s[2]
		x, w, _, y := epilogueArgs(m, k, n)
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			b.SetBytes(int64(2 * m * k * n))
			for b.Loop() {
				if err := Sgemm(m, k, n, x, w, y, 1, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

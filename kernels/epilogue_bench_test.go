package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// epilogueShapes are the GEMM+GELU benchmark's M×K×N: square layers and a skinny one (16 tokens through a
// 4096×4096 projection).
var epilogueShapes = [][3]int{{64, 64, 64}, {256, 256, 256}, {1024, 1024, 1024}, {16, 4096, 4096}}

// benchLayer times call on each of epilogueShapes with random X (M×K), W (K×N), bias (N), an output Y
// and a scratch Z (M×N each); MB/s reads as MFLOP/s of the GEMM (2·M·K·N per call).
func benchLayer(b *testing.B, call func(m, k, n int, x, w, bias, y, z []float32) error) {
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return v
	}
	for _, s := range epilogueShapes {
		m, k, n := s[0], s[1], s[2]
		x, w, bias, y, z := fill(m*k), fill(k*n), fill(n), make([]float32, m*n), make([]float32, m*n)
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			b.SetBytes(int64(2 * m * k * n))
			b.ResetTimer()
			for range b.N {
				if err := call(m, k, n, x, w, bias, y, z); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLinearGelu: the GEMM with its bias + GELU epilogue fused (one call).
func BenchmarkLinearGelu(b *testing.B) {
	benchLayer(b, func(m, k, n int, x, w, bias, y, _ []float32) error { return LinearGelu(m, k, n, x, w, bias, y) })
}

// BenchmarkGemmSigmoid: sigmoid(alpha·A·B + beta·C) with beta = 0 (before the epilogue split it ran as
// a row-streaming vector loop, not through the microkernels).
func BenchmarkGemmSigmoid(b *testing.B) {
	benchLayer(b, func(m, k, n int, x, w, _, y, _ []float32) error { return GemmSigmoid(m, k, n, x, w, y, 1, 0) })
}

// BenchmarkSgemmThenGelu: the layer as two kernels, plain sgemm and then an elementwise gelu over its
// result (no bias: the fused kernel's bias costs it, not this one).
func BenchmarkSgemmThenGelu(b *testing.B) {
	benchLayer(b, func(m, k, n int, x, w, _, y, z []float32) error {
		if err := Sgemm(m, k, n, x, w, y, 1, 0); err != nil {
			return err
		}
		return Gelu(m*n, y, z)
	})
}

// BenchmarkSgemmPlain: sgemm alone on the same shapes, the speed the fused layer should come close to.
func BenchmarkSgemmPlain(b *testing.B) {
	benchLayer(b, func(m, k, n int, x, w, _, y, _ []float32) error { return Sgemm(m, k, n, x, w, y, 1, 0) })
}

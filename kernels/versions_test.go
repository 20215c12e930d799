package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// The generated tests' shapes stay small, so two versions of the GEMM nests are exercised here: the
// packed nest whose row blocks (ic) run in parallel (M >= 4·MC), and the rows version with more than one
// 4096-wide column block (M <= 4, N > 4096), both on two workers, under every variant, against a float64
// reference. Tolerance: |err| <= 4·K·u·Σ|a||b| + |beta|·u·|c| (u the unit roundoff), the usual bound
// for a length-K dot product with some slack for reassociation.

func refGemm(M, K, N int, a func(i, p int) float64, b func(p, j int) float64, c []float64, alpha, beta float64) (want, mag []float64) {
	want, mag = make([]float64, M*N), make([]float64, M*N)
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var s, m float64
			for p := 0; p < K; p++ {
				s += a(i, p) * b(p, j)
				m += math.Abs(a(i, p) * b(p, j))
			}
			want[i*N+j] = alpha*s + beta*c[i*N+j]
			mag[i*N+j] = math.Abs(alpha)*m + math.Abs(beta*c[i*N+j])
		}
	}
	return want, mag
}

func checkClose(t *testing.T, what string, got func(int) float64, want, mag []float64, K int, u float64) {
	t.Helper()
	for x := range want {
		if d := math.Abs(got(x) - want[x]); d > 4*float64(K+2)*u*mag[x]+1e-30 {
			t.Fatalf("%s: element %d = %v, want %v (error %.3g, bound %.3g)", what, x, got(x), want[x], d, 4*float64(K+2)*u*mag[x])
		}
	}
}

func TestGemmVersionsParallel(t *testing.T) {
	defer Use("")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	rng := rand.New(rand.NewPCG(7, 8))
	for _, v := range Variants() {
		Use(v)
		for _, sh := range []struct{ M, K, N int }{
			{4*sgemmSlot.MC + 7, 301, 45},  // packed, ic parallel (with an edge block)
			{4*sgemmSlot.MC - 1, 301, 45},  // packed, jr parallel
			{3, 37, 2*4096 + 77},           // rows, three column blocks
			{1, 300, 4096 + 5},             // rows, one row
			{4*sgemmSlot.MC + 1, 1, 1 + 8}, // K = 1
		} {
			M, K, N := sh.M, sh.K, sh.N
			A, B, C := randSlice(M*K, rng), randSlice(K*N, rng), randSlice(M*N, rng)
			c64 := make([]float64, M*N)
			for i, x := range C {
				c64[i] = float64(x)
			}
			want, mag := refGemm(M, K, N, func(i, p int) float64 { return float64(A[i*K+p]) },
				func(p, j int) float64 { return float64(B[p*N+j]) }, c64, 1.5, -0.5)
			if err := Sgemm(M, K, N, A, B, C, 1.5, -0.5); err != nil {
				t.Fatal(err)
			}
			checkClose(t, fmt.Sprintf("%s sgemm %dx%dx%d", v, M, K, N), func(x int) float64 { return float64(C[x]) }, want, mag, K, 0x1p-24)

			// transposed A (packP for A), and the fused epilogue
			At := make([]float32, K*M)
			for i := 0; i < M; i++ {
				for p := 0; p < K; p++ {
					At[p*M+i] = A[i*K+p]
				}
			}
			C2 := randSlice(M*N, rng)
			if err := SgemmTn(K, M, N, At, B, C2, 1, 0); err != nil {
				t.Fatal(err)
			}
			want, mag = refGemm(M, K, N, func(i, p int) float64 { return float64(A[i*K+p]) },
				func(p, j int) float64 { return float64(B[p*N+j]) }, make([]float64, M*N), 1, 0)
			checkClose(t, fmt.Sprintf("%s sgemm_tn %dx%dx%d", v, M, K, N), func(x int) float64 { return float64(C2[x]) }, want, mag, K, 0x1p-24)

			bias := randSlice(N, rng)
			if err := GemmBiasRelu(M, K, N, A, B, bias, C2); err != nil {
				t.Fatal(err)
			}
			for x := range want {
				want[x] = max(want[x]+float64(bias[x%N]), 0)
				mag[x] += math.Abs(float64(bias[x%N]))
			}
			checkClose(t, fmt.Sprintf("%s gemm_bias_relu %dx%dx%d", v, M, K, N), func(x int) float64 { return float64(C2[x]) }, want, mag, K, 0x1p-24)

			// dgemm (its own blocks: MC differs)
			Md := 4*dgemmSlot.MC + 3
			if sh.M <= 4 {
				Md = sh.M
			}
			Ad, Bd, Cd := make([]float64, Md*K), make([]float64, K*N), make([]float64, Md*N)
			for i := range Ad {
				Ad[i] = rng.Float64()*2 - 1
			}
			for i := range Bd {
				Bd[i] = rng.Float64()*2 - 1
			}
			for i := range Cd {
				Cd[i] = rng.Float64()*2 - 1
			}
			want, mag = refGemm(Md, K, N, func(i, p int) float64 { return Ad[i*K+p] }, func(p, j int) float64 { return Bd[p*N+j] }, Cd, 0.75, 2)
			if err := Dgemm(Md, K, N, Ad, Bd, Cd, 0.75, 2); err != nil {
				t.Fatal(err)
			}
			checkClose(t, fmt.Sprintf("%s dgemm %dx%dx%d", v, Md, K, N), func(x int) float64 { return Cd[x] }, want, mag, K, 0x1p-53)
		}
	}
}

// TestEmptyReduction: K = 0 is valid (C = beta·C, as in BLAS) in every version of the nest, including
// those whose operand offsets lie past the end of the empty A and B.
func TestEmptyReduction(t *testing.T) {
	defer Use("")
	for _, v := range Variants() {
		Use(v)
		for _, M := range []int{0, 1, 2, 5, 4*sgemmSlot.MC + 1} {
			for _, N := range []int{1, 7, 4096 + 3} {
				for _, beta := range []float32{0, 0.5} {
					C := make([]float32, M*N)
					for i := range C {
						C[i] = 2
					}
					if err := Sgemm(M, 0, N, nil, nil, C, 1, beta); err != nil {
						t.Fatal(err)
					}
					for i, x := range C {
						if x != 2*beta {
							t.Fatalf("%s sgemm %dx0x%d beta %v: C[%d] = %v, want %v", v, M, N, beta, i, x, 2*beta)
						}
					}
				}
			}
			C := make([]float64, M*9)
			if err := Dgemm(M, 0, 9, nil, nil, C, 1, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
}

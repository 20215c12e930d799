package llvm

import "testing"

// extraSrc exercises what kernels.kdsl does not: every math function, select and comparisons, min,
// integer tensors and casts, f64 with f16 and bf16 mixed in, dims and index variables as values.
const extraSrc = `kernel fns(x: f32[N], y: out f32[N], z: out f32[N], w: out f32[N]) {
    y[i] = tanh(x[i]) + sigmoid(x[i]) - abs(x[i])
    z[i] = log(abs(x[i]) + 1) + sqrt(abs(x[i])) + exp(-x[i])
    w[i] = select(x[i] < 0, min(x[i], -x[i] / 2), neg(x[i]) * relu(x[i]))
}

kernel dfns(x: f64[N], y: out f64[N]) {
    y[i] = tanh(x[i]) + exp(x[i]) + log(abs(x[i]) + 1) + sigmoid(x[i]) + max(x[i], 0.25)
}

kernel ints(a: i32[N], b: i8[N], c: out i32[N], d: out f32[N]) {
    c[i] = a[i] * 3 - b[i] + max(a[i], b[i]) + i32(b[i]) / 2
    d[i] = f32(a[i]) / 4 + f32(i8(a[i]))
}

kernel mixed(h: f16[M, N], g: bf16[N], y: out f64[M, N], s: out f64[M]) {
    y[i, j] = h[i, j] * g[j] + f64(j) / N - f64(i) * 0.5
    s[i] = sum(j: f64(h[i, j]) * h[i, j])
}

kernel rowmin(X: f32[M, N], y: out f32[M]) {
    y[i] = min(j: X[i, j]) + max(j: X[i, j] * 2)
}
`

// TestExtraKernels runs extraSrc through the LLVM path and compares it with the interpreter, as
// TestKernelsAgainstInterpreter does for the library.
func TestExtraKernels(t *testing.T) {
	clang := tool(t, "clang-14", "clang")
	opt, llc := tool(t, "opt", "opt-14"), tool(t, "llc", "llc-14")
	p := pkg(t, extraSrc, "llvm", "llvm")
	checkPackage(t, p, opt, llc, clang)
}

package llvm

import (
	"runtime"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// wideMachine is the llvm target as target.Host makes it on an AVX-512 machine (64-byte vectors, 32
// registers: 16-lane f32 vector loops and the 14×32 / 14×16 register tiles), built here so that the
// wide code is checked on every machine.
func wideMachine(t *testing.T) target.Machine {
	t.Helper()
	m, err := target.Lookup("llvm")
	if err != nil {
		t.Fatal(err)
	}
	m.VecBytes, m.VecRegs = 64, 32
	if m.MMAKey() != "llvm:avx512" {
		t.Fatalf("MMAKey of the wide llvm machine: %s", m.MMAKey())
	}
	return m
}

// TestWideKernels compiles a subset of kernels.kdsl (GEMMs of every element type, the reductions and
// elementwise loops, strided and scratch-row kernels) and extraSrc for the wide llvm machine, with
// -mcpu=native on x86-64 hosts (AVX-512 code where the host has it), and compares them with the
// interpreter on ragged shapes.
func TestWideKernels(t *testing.T) {
	t.Parallel()
	clang := tool(t, "clang-14", "clang")
	opt, llc := tool(t, "opt", "opt-14"), tool(t, "llc", "llc-14")
	extra, err := check.File("extra.kdsl", extraSrc)
	if err != nil {
		t.Fatal(err)
	}
	var ks []*ir.Kernel
	for _, k := range append(kdslKernels(t), extra...) {
		switch k.Name {
		case "sgemm", "dgemm", "hgemm", "bgemm_bf16", "gemm_bias_relu", "softmax", "layernorm", "saxpy",
			"colsum", "sdot", "haxpy", "sum_mid", "fns", "mixed", "rowmin":
			ks = append(ks, k)
		}
	}
	p := compileKernels(t, "wide", wideMachine(t), ks)
	var flags []string
	if runtime.GOARCH == "amd64" {
		flags = append(flags, "-mcpu=native")
	}
	checkPackage(t, p, opt, llc, clang, flags...)
}

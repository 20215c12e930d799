//go:build amd64 && !purego

package mk

import (
	"os"
	"sync"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/codegen/amd64/emu"
)

// The AVX-512 kernels run in the instruction-level interpreter of package
// emu when the CPU lacks AVX-512, and also when KGEN_EMU=1 (so that a machine
// with AVX-512 shows the emulated runs too). Kernels of an ISA the CPU lacks
// are always emulated.

var (
	progOnce sync.Once
	prog     *emu.Program
	progErr  error
)

// program parses the committed mk_amd64.s.
func program(t testing.TB) *emu.Program {
	t.Helper()
	progOnce.Do(func() {
		src, err := os.ReadFile("mk_amd64.s")
		if err != nil {
			progErr = err
			return
		}
		prog, progErr = emu.Parse(string(src))
	})
	if progErr != nil {
		t.Fatal(progErr)
	}
	return prog
}

func forceEmu() bool { return os.Getenv("KGEN_EMU") == "1" }

// modes lists how the kernels of isa run here: "native" when the CPU has it,
// "emulated" when it does not, or for AVX-512 under KGEN_EMU=1.
func modes(isa string) []string {
	var ms []string
	if amd64.HostSupports(isa) {
		ms = append(ms, "native")
	}
	if !amd64.HostSupports(isa) || (isa == amd64.AVX512 && forceEmu()) {
		ms = append(ms, "emulated")
	}
	return ms
}

// forModes runs f as the subtests name/native and/or name/emulated.
func forModes(t *testing.T, name, isa string, f func(t *testing.T, mode string)) {
	for _, mode := range modes(isa) {
		t.Run(name+"/"+mode, func(t *testing.T) { f(t, mode) })
	}
}

// emulate returns fn's emulated twin on a fresh machine of prog (errors fail t)
// and the function that sets the memory regions it may access.
func emulate[F any](t *testing.T, p *emu.Program, name string) (F, func(rs ...emu.Region)) {
	t.Helper()
	m := p.Machine()
	fn, err := emu.Func[F](m, name)
	if err != nil {
		t.Fatal(err)
	}
	m.OnError(func(err error) { t.Fatalf("%s (emulated): %v", name, err) })
	t.Logf("%s runs in the x86 interpreter (codegen/amd64/emu)", name)
	return fn, m.SetRegions
}

// in returns k as it runs in mode.
func (k kernel[T]) in(t *testing.T, mode string) kernel[T] {
	if mode == "emulated" {
		k.fn, k.bind = emulate[kernFunc[T]](t, program(t), k.name)
	} else if !k.runnable() {
		t.Skipf("CPU lacks %s", k.isa)
	}
	return k
}

func (k kernelU[T]) in(t *testing.T, mode string) kernelU[T] {
	if mode == "emulated" {
		k.fn, k.bind = emulate[kernFuncU[T]](t, program(t), k.name)
	} else if !k.runnable() {
		t.Skipf("CPU lacks %s", k.isa)
	}
	return k
}

package ptx

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestPTXTextRoundTrip parses the text of every entry kgen writes — each kernel of kernels.kdsl and
// passes/testdata/mma.kdsl for sm_80 and sm_90a, and the TMA and production versions — and requires
// the parsed entries to be the lowering's values (so the emulator, which runs parsed text, executes
// exactly what the lowering built) and to print the same text.
func TestPTXTextRoundTrip(t *testing.T) {
	n := 0
	for _, file := range []string{"../../kernels.kdsl", "../../passes/testdata/mma.kdsl"} {
		for _, sub := range []string{"sm_80", "sm_90a"} {
			for _, f := range compileFile(t, file, "ptx:"+sub) {
				ks := []*Kernel{}
				k, err := Lower(f, sub)
				if err != nil {
					t.Errorf("%s: %v", f.Kernel.Name, err)
					continue
				}
				ks = append(ks, k)
				if sub == "sm_90a" {
					for _, v := range []func(*ir.Kernel) (*Kernel, error){tmaVariant, func(k *ir.Kernel) (*Kernel, error) { return prodVariant(k, ProdPlan) }} {
						vk, err := v(f.Kernel)
						if err != nil {
							t.Fatalf("%s: %v", f.Kernel.Name, err)
						}
						if vk != nil {
							ks = append(ks, vk)
						}
					}
				}
				for _, k := range ks {
					got, err := viaText(k)
					if err != nil {
						t.Fatalf("%s (%s): %v", f.Kernel.Name, sub, err)
					}
					for i, e := range k.Entries {
						n++
						if e.DynamicSharedBytes() != k.Launches[i].DynSharedBytes {
							t.Errorf("%s: the entry uses %d bytes of dynamic shared memory, its launch passes %d", e.Name, e.DynamicSharedBytes(), k.Launches[i].DynSharedBytes)
						}
						if d := entryDiff(e, got[i]); d != "" {
							t.Errorf("%s (%s): parsed entry differs: %s", e.Name, sub, d)
						}
					}
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d entries round-tripped", n)
	}
	t.Logf("%d entries", n)
}

// entryDiff describes the first difference between an entry and its parsed text ("" for none).
// Registers compare by class and number (the text has only the class); an extern shared array's
// element type is not in the text.
func entryDiff(a, b *Entry) string {
	text := func(e *Entry) string {
		return (&Module{Version: "8.0", Target: "sm_90a", Entries: []*Entry{e}}).Print()
	}
	if text(a) != text(b) {
		return "printed text"
	}
	norm := func(s []SharedArray) []SharedArray {
		out := slices.Clone(s)
		for i := range out {
			if out[i].Extern {
				out[i].T = 0
			}
		}
		return out
	}
	switch {
	case a.Name != b.Name || a.Doc != b.Doc || a.MaxTid != b.MaxTid || a.MinCTAs != b.MinCTAs:
		return "header"
	case !reflect.DeepEqual(a.Params, b.Params):
		return fmt.Sprintf("params %v, parsed %v", a.Params, b.Params)
	case !reflect.DeepEqual(norm(a.Shared), norm(b.Shared)):
		return fmt.Sprintf("shared %v, parsed %v", a.Shared, b.Shared)
	}
	// comments print the same (checked above); consecutive comment lines parse as one item
	code := func(body []item) []item {
		return slices.DeleteFunc(slices.Clone(body), func(it item) bool { _, ok := it.(comment); return ok })
	}
	ab, bb := code(a.body), code(b.body)
	if len(ab) != len(bb) {
		return fmt.Sprintf("%d labels and instructions, parsed %d", len(ab), len(bb))
	}
	for c, n := range a.nregs {
		if n != b.nregs[c] {
			return fmt.Sprintf("%d %s registers, parsed %d", n, c, b.nregs[c])
		}
	}
	for i, it := range ab {
		x, ok := it.(*Instr)
		if !ok {
			if it != bb[i] {
				return fmt.Sprintf("item %d: %v, parsed %v", i, it, bb[i])
			}
			continue
		}
		y, ok := bb[i].(*Instr)
		if !ok {
			return fmt.Sprintf("item %d is no instruction", i)
		}
		// where the opcode ends and the modifiers begin is not in the text ("cvta.to.global" + ".u64"
		// or "cvta" + ".to.global.u64"): the emulator reads the two joined, and the whole opcode only of
		// the instructions splitMnemonic keeps whole and of shfl.sync.MODE
		readWhole := wholeMnemonic(x.Op) || strings.HasPrefix(x.Op, "shfl.")
		if x.Op+strings.Join(x.Mods, "") != y.Op+strings.Join(y.Mods, "") || !slices.Equal(x.Types, y.Types) || readWhole && x.Op != y.Op {
			return fmt.Sprintf("item %d: %s %q %v, parsed %s %q %v", i, x.Op, x.Mods, x.Types, y.Op, y.Mods, y.Types)
		}
		if !reflect.DeepEqual(normRegs(x.Args), normRegs(y.Args)) || (x.Guard == nil) != (y.Guard == nil) || x.Neg != y.Neg {
			return fmt.Sprintf("item %d (%s): operands %v, parsed %v", i, x.Op, x.Args, y.Args)
		}
	}
	return ""
}

func normReg(r Reg) Reg { c, _ := r.T.regClass(); return Reg{T: c, n: r.n} }

func normRegs(args []Operand) []Operand {
	out := make([]Operand, len(args))
	for i, a := range args {
		switch x := a.(type) {
		case Reg:
			a = normReg(x)
		case Vec:
			v := make(Vec, len(x))
			for j, r := range x {
				v[j] = normReg(r)
			}
			a = v
		case FImm:
			if x.T == F32 {
				x.V = float64(float32(x.V)) // what the text holds, and what the emulator reads
			}
			a = x
		case Addr:
			if r, ok := x.Base.(Reg); ok {
				x.Base = normReg(r)
			}
			a = x
		case TensorRef:
			a = TensorRef{Map: normReg(x.Map), Coords: normRegs([]Operand{x.Coords})[0].(Vec)}
		}
		out[i] = a
	}
	return out
}

// runText parses a one-entry module whose body is instr (after a few register set-ups) and runs it on
// one block of 32 threads with a 64-byte global buffer p_out.
func runText(instr string) error {
	text := `.version 8.0
.target sm_80
.address_size 64

.visible .entry t(
	.param .u64 p_out
)
{
	.reg .pred %p<3>;
	.reg .b16 %h<3>;
	.reg .b32 %r<5>;
	.reg .b64 %rd<5>;
	.reg .f32 %f<5>;
	ld.param.u64 %rd1, [p_out];
	mov.u32 %r1, 3;
	mov.u32 %r2, 1;
	mov.f32 %f1, 0f3FC00000;
	mov.s64 %rd2, -8;
	mov.s64 %rd3, 2;
	setp.lt.s64 %p1, %rd2, %rd3;
	setp.gt.s64 %p2, %rd2, %rd3;
` + "\t" + instr + `
	st.global.b64 [%rd1], %rd4;
	st.global.f32 [%rd1+8], %f2;
	ret;
}
`
	mod, err := parsePTX(text, nil)
	if err != nil {
		return err
	}
	buf := &emuBuf{name: "out", data: make([]byte, 64)}
	m := &emulator{e: mod.Entries[0], params: map[string]uint64{"p_out": 1 << globalShift}, global: []*emuBuf{buf}}
	return m.run([3]int{1, 1, 1}, [3]int{32, 1, 1})
}

// TestEmulatorRefuses: PTX the emulator does not model — an unknown opcode, a modifier or type of a
// known one that it does not implement, a collective of another shape — is refused with a message
// naming it, never run as the nearest form it knows; text the front end does not read is refused with
// its line. The modelled forms next to them run.
func TestEmulatorRefuses(t *testing.T) {
	for _, ok := range []string{
		"add.rn.f32 %f2, %f1, %f1;", "mul.lo.s64 %rd4, %rd2, %rd3;", "shr.b64 %rd4, %rd2, 1;",
		"or.pred %p1, %p1, %p2;", "add.u32 %r3, %r1, %r2;", "cvt.rzi.s32.f32 %r3, %f1;", "max.NaN.f32 %f2, %f1, %f1;",
	} {
		if err := runText(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, c := range []struct{ instr, want string }{
		{"mul.hi.s64 %rd4, %rd2, %rd3;", "unknown instruction mul.hi.s64"},
		{"add.rz.f32 %f2, %f1, %f1;", "unknown instruction add.rz.f32"},
		{"add.sat.s32 %r3, %r1, %r2;", "unknown instruction add.sat.s32"},
		{"div.u32 %r3, %r1, %r2;", "unknown instruction div.u32"},
		{"setp.lt.u32 %p1, %r1, %r2;", "unknown instruction setp.lt.u32"},
		{"cvt.rzi.f32.f32 %f2, %f1;", "unknown instruction cvt.rzi.f32.f32"},
		{"ex2.approx.f32 %f2, %f1;", "unknown instruction ex2.approx.f32"},
		{"atom.global.add.f32 %f2, [%rd1], %f1;", "unknown instruction atom.global.add.f32"},
		{"ld.volatile.global.f32 %f2, [%rd1];", "state space volatile"},
		{"shfl.sync.bfly.b64 %rd4, %rd2, 1, 31, -1;", "only the .b32 form"},
		{"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r1, %r2, %r3, %r4}, {%r1, %r2}, {%r1}, {%r1, %r2, %r3, %r4};", "unknown instruction mma.sync.aligned.m16n8k32"},
		{"ldmatrix.sync.aligned.m8n8.x4.shared.b32 {%r1, %r2, %r3, %r4}, [%rd1];", "unknown instruction ldmatrix"},
		{"mbarrier.arrive.release.cluster.shared::cluster.b64 %rd4, [%rd1];", "unknown instruction mbarrier.arrive.release"},
		{"bar.arrive 0, 32;", "bar.arrive"},
		// the front end
		{"add.rn.f32 %q2, %f1, %f1;", `register "%q2"`},
		{"add.rn.f32 %f9, %f1, %f1;", "register %f9 not declared"},
		{"add.rn.f32 %f2, %f1, %f1", "instruction without ';'"},
		{"@%r1 bra $L1;", "is not a predicate register"},
		{"ld.global.f32 %f2, [%f1];", "address base %f1 is not a 64-bit register"},
		{".local .align 4 .b8 buf[16];", "directive .local"},
		{"bra.uni $L7;", "label $L7 is not defined"},
	} {
		err := runText(c.instr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.instr, err, c.want)
		} else {
			t.Logf("%s: %v", c.instr, err)
		}
	}
}

package ptx

import (
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestPlantedBugs shows that the emulated differential test catches the bugs a GPU backend is prone to:
// each case lowers a kernel, plants one bug in its instructions, and expects checkShapes to fail.
func TestPlantedBugs(t *testing.T) {
	fs := kernelsByName(t, "../../kernels.kdsl", "ptx:sm_80")
	cases := []struct {
		name, kernel string
		plant        func(e *Entry) bool // reports whether it changed something
	}{
		{"removed barrier between the two reduction levels", "softmax", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == "bar.sync" }, func(in *Instr) *Instr { return nil }, 1)
		}},
		{"removed barrier after the row maximum", "softmax", func(e *Entry) bool {
			n := 0
			return edit(e, func(in *Instr) bool {
				if in.Op == "bar.sync" {
					n++
					return n == 2
				}
				return false
			}, func(in *Instr) *Instr { return nil }, 1)
		}},
		{"wrong shuffle lane mask", "softmax", func(e *Entry) bool {
			// the last butterfly step pairs lanes 2 apart again instead of neighbours
			return edit(e, func(in *Instr) bool { return in.Op == "shfl.sync.bfly" && in.Args[2] == Imm(1) },
				func(in *Instr) *Instr {
					c := *in
					c.Args = []Operand{in.Args[0], in.Args[1], Imm(2), in.Args[3], in.Args[4]}
					return &c
				}, -1)
		}},
		{"shuffle member mask of half a warp", "layernorm", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == "shfl.sync.bfly" },
				func(in *Instr) *Instr {
					c := *in
					c.Args = []Operand{in.Args[0], in.Args[1], in.Args[2], in.Args[3], Imm(0xFFFF)}
					return &c
				}, 1)
		}},
		{"async wait retires too little", "sgemm", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == "cp.async.wait_group" && in.Args[0] == Imm(1) },
				func(in *Instr) *Instr { c := *in; c.Args = []Operand{Imm(2)}; return &c }, 1)
		}},
		{"off-by-one copy edge predicate", "sgemm", func(e *Entry) bool {
			// both the element path and the 16-byte chunks' count of valid columns
			a := edit(e, func(in *Instr) bool { return in.Op == "setp.lt.and" },
				func(in *Instr) *Instr { c := *in; c.Op = "setp.le.and"; return &c }, -1)
			b := edit(e, func(in *Instr) bool { return in.Comment == "valid columns from the chunk on" },
				func(in *Instr) *Instr {
					c := *in
					c.Args = []Operand{in.Args[0], in.Args[1], Imm(int64(in.Args[2].(Imm)) - 1)}
					return &c
				}, -1)
			return a && b
		}},
		{"swapped register-tile operand", "sgemm", func(e *Entry) bool {
			var first *Instr
			return edit(e, func(in *Instr) bool { return in.Op == "fma.rn" && len(in.Args) == 4 }, func(in *Instr) *Instr {
				if first == nil {
					first = in
					return in
				}
				c := *in
				c.Args = []Operand{in.Args[0], first.Args[2], in.Args[2], in.Args[3]} // a[1] replaced by b[0]
				return &c
			}, 2)
		}},
		{"swapped fragment halves", "bgemm", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool {
				if len(in.Args) != 2 {
					return false
				}
				_, ok := in.Args[1].(Vec)
				return in.Op == "mov" && ok && len(in.Args) == 2
			},
				func(in *Instr) *Instr {
					v := in.Args[1].(Vec)
					c := *in
					c.Args = []Operand{in.Args[0], Vec{v[1], v[0]}}
					return &c
				}, 1)
		}},
		{"ldmatrix without .trans", "hgemm", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" },
				func(in *Instr) *Instr { c := *in; c.Op = "ldmatrix.sync.aligned.m8n8.x2.shared.b16"; return &c }, -1)
		}},
		{"ldmatrix without .trans on a stage stored along M", "bgemm_tt", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" },
				func(in *Instr) *Instr { c := *in; c.Op = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"; return &c }, -1)
		}},
		{"ldmatrix .trans on a stage stored along K", "bgemm_tt", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == "ldmatrix.sync.aligned.m8n8.x2.shared.b16" },
				func(in *Instr) *Instr { c := *in; c.Op = "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"; return &c }, -1)
		}},
		{"off-by-one chunk predicate down a transposed tile", "bgemm_tt", func(e *Entry) bool {
			// the 16-byte chunks only (the element path is left right): one element too many per chunk
			return edit(e, func(in *Instr) bool { return in.Comment == "valid columns from the chunk on" },
				func(in *Instr) *Instr {
					c := *in
					c.Args = []Operand{in.Args[0], in.Args[1], Imm(int64(in.Args[2].(Imm)) - 1)}
					return &c
				}, -1)
		}},
		{"off-by-one accumulator store guard", "sgemm_acc", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == "setp.gt.and" },
				func(in *Instr) *Instr { c := *in; c.Op = "setp.ge.and"; return &c }, -1)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectDetected(t, fs[c.kernel], "sm_80", 3, c.name, c.plant) })
	}
}

// kernelsByName compiles a kdsl file for a target spec and indexes its functions by kernel name.
func kernelsByName(t *testing.T, path, spec string) map[string]*ir.Func {
	fs := map[string]*ir.Func{}
	for _, f := range compileFile(t, path, spec) {
		fs[f.Kernel.Name] = f
	}
	return fs
}

// expectDetected lowers f for sub, checks that checkShapes (nshapes shapes) passes, plants a bug in the
// entries with plant (which reports whether it changed something) and expects checkShapes to fail.
func expectDetected(t *testing.T, f *ir.Func, sub string, nshapes int, name string, plant func(e *Entry) bool) {
	t.Helper()
	k, err := Lower(f, sub)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkShapes(k, f, nshapes); err != nil {
		t.Fatalf("the unplanted kernel fails: %v", err)
	}
	changed := false
	for _, e := range k.Entries {
		changed = plant(e) || changed
	}
	if !changed {
		t.Fatal("nothing to plant the bug in")
	}
	if err := checkShapes(k, f, nshapes); err == nil {
		t.Fatalf("planted bug %q in %s not detected", name, f.Kernel.Name)
	} else {
		t.Logf("detected: %v", err)
	}
}

// edit replaces the first n instructions matching match (all of them for n < 0) by what repl returns
// (nil deletes); it reports whether any matched.
func edit(e *Entry, match func(*Instr) bool, repl func(*Instr) *Instr, n int) bool {
	var out []item
	done := 0
	for _, it := range e.body {
		in, ok := it.(*Instr)
		if ok && match(in) && (n < 0 || done < n) {
			done++
			if r := repl(in); r != nil {
				out = append(out, r)
			}
			continue
		}
		out = append(out, it)
	}
	e.body = out
	return done > 0
}

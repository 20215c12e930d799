package ptx

import (
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestIndexArithmetic checks the emitted index arithmetic against ir.IBinOp for every operator, with
// negative left operands (floor division and modulo differ from PTX's truncating div/rem there), the
// right operand in a register and as an immediate (powers of two take the shift and mask forms).
func TestIndexArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, op := range []byte{'+', '-', '*', 'm', 'M', '/', '%', '^', '&', '<', '>'} {
		for _, imm := range []bool{false, true} {
			for trial := 0; trial < 40; trial++ {
				x := rng.IntN(2001) - 1000
				y := rng.IntN(2001) - 1000
				switch op {
				case '/', '%':
					y = []int{1, 2, 3, 7, 8, 16, 64, 100}[rng.IntN(8)]
				case '<', '>':
					y = rng.IntN(20)
				case '^', '&':
					x, y = rng.IntN(1<<20), rng.IntN(1<<20)
				}
				want, msg := ir.IBinOp(op, x, y)
				if msg != "" {
					t.Fatal(msg)
				}
				e := NewEntry("ix")
				l := &lowerer{e: e, plan: map[string]int{}, vars: map[*ir.Var]Reg{}, consts: map[*ir.Var]int{}}
				vx, vy := &ir.Var{Name: "x"}, &ir.Var{Name: "y"}
				l.vars[vx] = e.Ld(Param, S64, Addr{Base: e.AddParam("p_x", S64)})
				var ye ir.IExpr = ir.IConst{V: y}
				if !imm {
					l.vars[vy] = e.Ld(Param, S64, Addr{Base: e.AddParam("p_y", S64)})
					ye = ir.IVar{V: vy}
				}
				r := l.ireg(ir.IBin{Op: op, X: ir.IVar{V: vx}, Y: ye})
				out := e.Ld(Param, U64, Addr{Base: e.AddParam("p_out", U64)})
				e.St(Global, S64, Addr{Base: out}, r)
				buf := &emuBuf{name: "out", data: make([]byte, 8)}
				m := &emulator{e: e, params: map[string]uint64{"p_x": uint64(int64(x)), "p_y": uint64(int64(y)), "p_out": 1 << globalShift}, global: []*emuBuf{buf}}
				if err := m.run([3]int{1, 1, 1}, [3]int{1, 1, 1}); err != nil {
					t.Fatal(err)
				}
				if got := int64(load(buf.data, 8)); got != int64(want) {
					t.Fatalf("%d %s %d (immediate %v) = %d, want %d", x, ir.IOpString(op), y, imm, got, want)
				}
			}
		}
	}
}

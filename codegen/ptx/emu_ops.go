package ptx

import (
	"math"
	"strings"

	"github.com/kgen-dev/kgen/f16"
)

// Instruction semantics of the emulator (emu.go).

// exec runs one instruction; it reports true when the thread must stop (barrier).
func (m *emulator) exec(th *emuThread, in *Instr) bool {
	tok, ok := m.names[in]
	if !ok {
		var name strings.Builder
		name.WriteString(in.Op)
		for _, md := range in.Mods {
			name.WriteString(md)
		}
		for _, t := range in.Types {
			name.WriteString(t.String())
		}
		tok = strings.Split(name.String(), ".")
		if m.names == nil {
			m.names = map[*Instr][]string{}
		}
		m.names[in] = tok
	}
	var t Type
	if len(in.Types) > 0 {
		t = in.Types[len(in.Types)-1]
	}
	a := in.Args
	src := func(i int) uint64 { return m.value(th, a[i], t) }
	dst := func(v uint64) { m.set(th, a[0].(Reg), v) }
	isF := t == F32 || t == F64
	switch tok[0] {
	case "mbarrier":
		return m.mbarrierOp(th, in) // emu_tma_test.go
	case "wgmma", "fence":
		if !m.wgThreadOp(th, in) {
			emuError("unknown instruction %s", in.Op)
		}
	case "ld":
		n := t.Bits() / 8
		if tok[1] == "param" {
			dst(m.params[string(a[1].(Addr).Base.(Sym))])
			return false
		}
		if v, ok := a[0].(Vec); ok {
			// ld.space.vN.type {r0, ..}, [addr]: N consecutive elements, aligned to the vector size
			total := n * len(v)
			if tok[2] != "v"+string(rune('0'+len(v))) {
				emuError("%s with %d registers", strings.Join(tok, "."), len(v))
			}
			b, i, off := m.mem(th, tok[1], a[1].(Addr), total)
			if (m.value(th, a[1].(Addr).Base, B64)+uint64(a[1].(Addr).Off))%uint64(total) != 0 {
				emuError("%s: address not aligned to %d bytes", strings.Join(tok, "."), total)
			}
			if tok[1] == "shared" {
				m.sharedAccess(th, i, off, total, false)
			}
			for k, r := range v {
				m.set(th, r, load(b.data[off+k*n:], n))
			}
			return false
		}
		b, i, off := m.mem(th, tok[1], a[1].(Addr), n)
		if tok[1] == "shared" {
			m.sharedAccess(th, i, off, n, false)
		}
		dst(load(b.data[off:], n))
	case "st":
		n := t.Bits() / 8
		b, i, off := m.mem(th, tok[1], a[0].(Addr), n)
		if tok[1] == "shared" {
			m.sharedAccess(th, i, off, n, true)
		}
		storeBytes(b.data[off:], n, src(1))
	case "cvta":
		dst(src(1))
	case "mov":
		if v, ok := a[0].(Vec); ok {
			// unpack: the first element from the low bits
			bits, w := src(1), t.Bits()/len(v)
			for _, r := range v {
				m.set(th, r, bits&(1<<w-1))
				bits >>= w
			}
			return false
		}
		if v, ok := a[1].(Vec); ok {
			// pack: the first element in the low bits
			var bits uint64
			w := t.Bits() / len(v)
			for i := len(v) - 1; i >= 0; i-- {
				bits = bits<<w | m.reg(th, v[i])&(1<<w-1)
			}
			dst(bits)
			return false
		}
		dst(src(1))
	case "cvt":
		if in.Op == "cvt.rna.tf32.f32" {
			dst(roundTF32(m.value(th, a[1], F32)))
			return false
		}
		dst(m.cvt(tok[1:], src(1), in.Types))
	case "add", "sub", "mul", "div", "rem", "min", "max", "fma", "neg", "abs", "sqrt", "and", "or", "xor", "shl", "shr", "copysign":
		checkModelled(tok, len(in.Types), t)
		if t == Pred {
			x, y := src(1) != 0, src(2) != 0
			dst(b2u(map[string]bool{"and": x && y, "or": x || y, "xor": x != y}[tok[0]]))
			return false
		}
		if isF {
			dst(m.float(tok, t, a, src))
		} else {
			dst(m.integer(tok[0], t, a, src))
		}
	case "setp":
		checkModelled(tok, len(in.Types), t)
		cmp := tok[1]
		r := compareOp(cmp, src(1), src(2), t)
		if len(tok) > 3 && tok[2] == "and" {
			r = r && src(3) != 0
		}
		dst(b2u(r))
	case "selp":
		if src(3) != 0 {
			dst(src(1))
		} else {
			dst(src(2))
		}
	case "bra":
		th.pc = m.labels[a[0].(Label).n]
	case "bar":
		if tok[1] == "sync" {
			th.barrier = true
			return true
		}
		emuError("%s", strings.Join(tok, "."))
	case "cp":
		switch tok[2] {
		case "ca", "cg":
			size, srcSize := int(src(2)), int(src(3))
			if (tok[2] == "cg" && size != 16) || (size != 4 && size != 8 && size != 16) || srcSize > size || srcSize < 0 {
				emuError("%s with cp-size %d, src-size %d", strings.Join(tok, "."), size, srcSize)
			}
			for _, x := range []Addr{a[0].(Addr), a[1].(Addr)} {
				if (m.value(th, x.Base, B64)+uint64(x.Off))%uint64(size) != 0 {
					emuError("%s: address not aligned to %d bytes", strings.Join(tok, "."), size)
				}
			}
			m.mem(th, "shared", a[0].(Addr), size) // bounds check of the destination
			data := make([]byte, size)
			if srcSize > 0 {
				sb, _, soff := m.mem(th, "global", a[1].(Addr), srcSize)
				copy(data, sb.data[soff:soff+srcSize])
			}
			dstAddr := m.value(th, a[0].(Addr).Base, B64) + uint64(a[0].(Addr).Off)
			th.open = append(th.open, emuCopy{dst: dstAddr, data: data})
			if emuBanks != nil {
				emuBanks.cp(m, th, in, dstAddr, size)
			}
		case "bulk":
			m.bulkTensor(th, in) // emu_tma_test.go
		case "commit_group":
			th.pending = append(th.pending, th.open)
			th.open = nil
		case "wait_group":
			keep := int(src(0))
			for len(th.pending) > keep {
				for _, c := range th.pending[0] {
					b, i, off := m.mem(th, "shared", Addr{Base: Imm(int64(c.dst))}, len(c.data))
					m.sharedAccess(th, i, off, len(c.data), true)
					copy(b.data[off:], c.data)
				}
				th.pending = th.pending[1:]
			}
		default:
			emuError("unknown instruction %s", strings.Join(tok, "."))
		}
	default:
		emuError("unknown instruction %s", strings.Join(tok, "."))
	}
	return false
}

// checkModelled refuses an arithmetic or compare instruction whose modifiers or type the emulator does
// not implement (mul.hi, add.sat, a rounding mode other than .rn, unsigned integer arithmetic, ...)
// rather than run it as the nearest form it knows. tok is the mnemonic split at dots, ntypes the number
// of type suffixes at its end, t the last of them.
func checkModelled(tok []string, ntypes int, t Type) {
	op, mods := tok[0], strings.Join(tok[1:len(tok)-ntypes], ".")
	ok := false
	signed := t == S32 || t == S64
	bits := t == B16 || t == B32 || t == B64
	switch {
	case ntypes != 1:
	case op == "setp":
		cmp, _, _ := strings.Cut(mods, ".")
		and := mods == cmp || mods == cmp+".and"
		switch {
		case t == F32 || t == F64:
			ok = and && strings.Contains(" lt le gt ge eq ne neu nan ltu ", " "+cmp+" ")
		case signed:
			ok = and && strings.Contains(" lt le gt ge eq ne ", " "+cmp+" ")
		case bits:
			ok = and && (cmp == "eq" || cmp == "ne")
		}
	case t == Pred:
		ok = mods == "" && (op == "and" || op == "or" || op == "xor")
	case t == F32 || t == F64:
		switch op {
		case "add", "sub", "mul", "div", "fma", "sqrt":
			ok = mods == "rn"
		case "neg", "abs", "copysign":
			ok = mods == ""
		case "min", "max":
			ok = mods == "" || mods == "NaN"
		}
	case signed:
		switch op {
		case "add", "sub", "div", "rem", "min", "max", "neg", "shr":
			ok = mods == ""
		case "mul":
			ok = mods == "lo"
		}
	case bits:
		ok = mods == "" && strings.Contains(" and or xor shl shr ", " "+op+" ")
	case t == U16 || t == U32 || t == U64:
		// the same bits as the signed forms (two's complement); div, rem, min, max, shr and compares
		// on unsigned values are not modelled
		ok = (op == "add" || op == "sub") && mods == "" || op == "mul" && mods == "lo"
	}
	if !ok {
		emuError("unknown instruction %s (not modelled: the emulator runs only the forms the lowering emits)", strings.Join(tok, "."))
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func compareOp(cmp string, x, y uint64, t Type) bool {
	if t == F32 || t == F64 {
		a, b := fval(x, t), fval(y, t)
		switch cmp {
		case "lt":
			return a < b
		case "le":
			return a <= b
		case "gt":
			return a > b
		case "ge":
			return a >= b
		case "eq":
			return a == b
		case "ne":
			return a != b && a == a && b == b
		case "neu":
			return a != b
		case "nan":
			return a != a || b != b
		case "ltu":
			return !(a >= b)
		}
		emuError("setp.%s on floats", cmp)
	}
	a, b := sext(x, t), sext(y, t)
	switch cmp {
	case "lt":
		return a < b
	case "le":
		return a <= b
	case "gt":
		return a > b
	case "ge":
		return a >= b
	case "eq":
		return a == b
	case "ne":
		return a != b
	}
	emuError("setp.%s on integers", cmp)
	return false
}

func (m *emulator) float(tok []string, t Type, a []Operand, src func(int) uint64) uint64 {
	x := fval(src(1), t)
	r := func(v float64) uint64 { return fbits(v, t) }
	nanProp := len(tok) > 1 && tok[1] == "NaN"
	switch tok[0] {
	case "neg":
		return r(-x)
	case "abs":
		return r(math.Abs(x))
	case "sqrt":
		return r(math.Sqrt(x))
	}
	y := fval(src(2), t)
	switch tok[0] {
	case "add":
		return r(x + y)
	case "sub":
		return r(x - y)
	case "mul":
		return r(x * y)
	case "div":
		return r(x / y)
	case "fma":
		return r(math.FMA(x, y, fval(src(3), t)))
	case "copysign":
		return r(math.Copysign(y, x))
	case "min", "max":
		if x != x || y != y {
			if nanProp {
				return r(math.NaN())
			}
			if x != x {
				return r(y)
			}
			return r(x)
		}
		if tok[0] == "min" {
			return r(math.Min(x, y))
		}
		return r(math.Max(x, y))
	}
	emuError("float op %s", strings.Join(tok, "."))
	return 0
}

func (m *emulator) integer(op string, t Type, a []Operand, src func(int) uint64) uint64 {
	x := sext(src(1), t)
	var y int64
	if len(a) > 2 {
		y = sext(src(2), t)
	}
	var v int64
	switch op {
	case "add":
		v = x + y
	case "sub":
		v = x - y
	case "mul":
		v = x * y
	case "div":
		if y == 0 {
			v = -1
		} else {
			v = x / y
		}
	case "rem":
		if y == 0 {
			emuError("rem by zero")
		}
		v = x % y
	case "min":
		v = min(x, y)
	case "max":
		v = max(x, y)
	case "and":
		v = x & y
	case "xor":
		v = x ^ y
	case "or":
		v = x | y
	case "shl":
		v = x << uint64(src(2)&0xFFFFFFFF)
	case "shr":
		if t == S32 || t == S64 {
			v = x >> uint64(src(2)&0xFFFFFFFF) // arithmetic
		} else {
			v = int64(uint64(x) & (1<<uint(t.Bits()) - 1) >> uint64(src(2)&0xFFFFFFFF)) // .b: logical
		}
	case "neg":
		v = -x
	default:
		emuError("integer op %s", op)
	}
	return intBits(v, t)
}

// cvt converts between the types the lowering uses; mods holds the rounding modifier, if any, then the
// two types.
func (m *emulator) cvt(tok []string, v uint64, types []Type) uint64 {
	to, from := types[0], types[1]
	rnd := ""
	if len(tok) == 3 {
		rnd = tok[0]
	}
	isF := func(t Type) bool { return t == F32 || t == F64 || t == F16 || t == BF16 }
	// the rounding each conversion the emulator models takes (anything else is refused, not guessed)
	want := ""
	switch {
	case len(tok) > 3 || len(types) != 2:
		want = "?"
	case isF(to) && isF(from) && to == from:
		want = "rni"
	case isF(to) && isF(from) && to.Bits() < from.Bits(), isF(to) && !isF(from):
		want = "rn"
	case isF(from) && !isF(to):
		want = "rzi"
	}
	if rnd != want {
		emuError("unknown instruction cvt.%s (not modelled: the emulator runs only the forms the lowering emits)", strings.Join(tok, "."))
	}
	fromF := func() float64 {
		switch from {
		case F16:
			return float64(f16.F16(uint16(v)).Float32())
		case BF16:
			return float64(f16.BF16(uint16(v)).Float32())
		}
		return fval(v, from)
	}
	switch {
	case isF(to) && isF(from):
		x := fromF()
		switch to {
		case F16:
			return uint64(f16.FromFloat64(x))
		case BF16:
			return uint64(f16.BF16FromFloat64(x))
		}
		if rnd == "rni" {
			x = math.RoundToEven(x)
		}
		return fbits(x, to)
	case isF(from):
		x := fromF()
		if x != x {
			return 0
		}
		if rnd != "rzi" {
			emuError("cvt.%s float to integer", rnd)
		}
		return intBits(int64(math.Trunc(x)), to)
	case isF(to):
		var x float64
		if from == U32 || from == U16 || from == U64 {
			x = float64(v)
		} else {
			x = float64(sext(v, from))
		}
		return fbits(x, to)
	}
	// integer to integer: sign- or zero-extend from the source, truncate to the destination
	var x int64
	switch from {
	case U16, U32, U64, B16, B32, B64:
		x = int64(v & (1<<uint(from.Bits()) - 1))
		if from.Bits() == 64 {
			x = int64(v)
		}
	default:
		x = sext(v, from)
	}
	return intBits(x, to)
}

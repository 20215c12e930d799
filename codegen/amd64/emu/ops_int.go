package emu

import (
	"math/bits"
	"strings"
)

// compileInt handles the general-purpose, flag, branch and misc instructions.
// It returns false when op is not one of them.
func compileInt(f *function, in *inst) (bool, error) {
	a := in.args
	n := len(a)
	op := in.op
	switch op {
	case "RET":
		if n == 0 {
			in.exec = func(m *Machine, in *inst) (int, error) { return pcRet, nil }
		}
		return true, nil
	case "CALL":
		// CALL ·name(SB) of another routine of the file (looked up when executed: it may come later).
		if n == 1 && a[0].kind == kMem && a[0].mem == memSym {
			name := strings.TrimPrefix(a[0].sym, "·")
			in.exec = func(m *Machine, in *inst) (int, error) {
				callee, ok := m.prog.funcs[name]
				if !ok {
					return 0, m.fail("CALL of %s: no such routine in the file", name)
				}
				if err := m.callInner(callee); err != nil {
					return 0, err
				}
				return m.pc + 1, nil
			}
		}
		return true, nil
	case "JMP":
		if n == 1 && a[0].kind == kLabel {
			t, ok := f.labels[a[0].label]
			if !ok {
				return true, in.unsupported("undefined label %s", a[0].label)
			}
			in.target = t
			in.exec = func(m *Machine, in *inst) (int, error) { return in.target, nil }
		}
		return true, nil
	case "PREFETCHT0", "PREFETCHT1", "PREFETCHT2", "PREFETCHNTA":
		// A prefetch never faults and changes no architectural state.
		if n == 1 && isM(&a[0]) {
			in.exec = func(m *Machine, in *inst) (int, error) { return m.pc + 1, nil }
		}
		return true, nil
	case "VZEROUPPER":
		if n == 0 {
			in.exec = func(m *Machine, in *inst) (int, error) {
				for r := 0; r < 16; r++ { // registers 16-31 are not affected
					clear(m.v[r].b()[16:])
				}
				return m.pc + 1, nil
			}
		}
		return true, nil
	}
	if strings.HasPrefix(op, "J") {
		c, ok := lookupCond(op[1:])
		if !ok {
			return false, nil
		}
		if n == 1 && a[0].kind == kLabel {
			t, ok := f.labels[a[0].label]
			if !ok {
				return true, in.unsupported("undefined label %s", a[0].label)
			}
			in.target = t
			in.exec = func(m *Machine, in *inst) (int, error) {
				ok, err := m.test(c)
				if err != nil {
					return 0, err
				}
				if ok {
					return in.target, nil
				}
				return m.pc + 1, nil
			}
		}
		return true, nil
	}
	if strings.HasPrefix(op, "CMOVQ") {
		c, ok := lookupCond(op[5:])
		if !ok {
			return false, nil
		}
		if n == 2 && isGM(&a[0]) && isG(&a[1]) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				ok, err := m.test(c)
				if err != nil {
					return 0, err
				}
				// The source is read (and may fault) whatever the condition.
				v, err := m.readInt(&in.args[0], 8)
				if err != nil {
					return 0, err
				}
				if ok {
					m.gpr[in.args[1].reg] = v
				}
				return m.pc + 1, nil
			}
		}
		return true, nil
	}
	switch {
	case op == "MOVWLZX" && n == 2 && isGM(&a[0]) && isG(&a[1]):
		// a 16-bit word zero-extended into a 32-bit register (whose upper half is cleared)
		in.exec = func(m *Machine, in *inst) (int, error) {
			v, err := m.readInt(&in.args[0], 2)
			if err != nil {
				return 0, err
			}
			m.gpr[in.args[1].reg] = v & 0xffff
			return m.pc + 1, nil
		}
		return true, nil
	case op == "MOVW" && n == 2 && isGM(&a[0]) && isG(&a[1]):
		// a 16-bit move into a register keeps its bits 16..63
		in.exec = func(m *Machine, in *inst) (int, error) {
			v, err := m.readInt(&in.args[0], 2)
			if err != nil {
				return 0, err
			}
			r := in.args[1].reg
			m.gpr[r] = m.gpr[r]&^0xffff | v&0xffff
			return m.pc + 1, nil
		}
		return true, nil
	}
	size := 0
	base := op
	if l := len(op); l > 1 && (op[l-1] == 'Q' || op[l-1] == 'L') {
		size = 8
		if op[l-1] == 'L' {
			size = 4
		}
		base = op[:l-1]
	}
	switch base {
	case "MOV":
		if size == 0 {
			return false, nil
		}
		if n == 2 && isGIM(&a[0]) && isGM(&a[1]) && !(isM(&a[0]) && isM(&a[1])) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				v, err := m.readInt(&in.args[0], size)
				if err != nil {
					return 0, err
				}
				if err := m.writeInt(&in.args[1], v, size); err != nil {
					return 0, err
				}
				return m.pc + 1, nil
			}
			return true, nil
		}
		if size == 8 && n == 2 && (isV(&a[0]) || isV(&a[1])) {
			return false, nil // MOVQ to/from an X register: see the vector instructions
		}
		return true, nil
	case "ADD", "SUB", "AND", "OR", "XOR", "CMP", "TEST":
		if size == 0 {
			return false, nil
		}
		src, dst := 0, 1
		if n != 2 {
			return true, nil
		}
		if base == "CMP" {
			// Go's CMP keeps Intel's order: CMPQ x, y sets the flags of x - y.
			if !isGIM(&a[0]) || !isGIM(&a[1]) || (isM(&a[0]) && isM(&a[1])) || isI(&a[0]) {
				return true, nil
			}
		} else if !isGIM(&a[src]) || !isGM(&a[dst]) || (isM(&a[0]) && isM(&a[1])) {
			return true, nil
		}
		in.exec = func(m *Machine, in *inst) (int, error) {
			x, err := m.readInt(&in.args[0], size)
			if err != nil {
				return 0, err
			}
			y, err := m.readInt(&in.args[1], size)
			if err != nil {
				return 0, err
			}
			var r uint64
			write := true
			switch base {
			case "ADD":
				r = y + x
				m.flagsAdd(y, x, r, size)
			case "SUB":
				r = y - x
				m.flagsSub(y, x, r, size)
			case "CMP":
				m.flagsSub(x, y, x-y, size)
				write = false
			case "AND":
				r = y & x
				m.flagsLogic(r, size)
			case "TEST":
				m.flagsLogic(y&x, size)
				write = false
			case "OR":
				r = y | x
				m.flagsLogic(r, size)
			case "XOR":
				r = y ^ x
				m.flagsLogic(r, size)
			}
			if write {
				if err := m.writeInt(&in.args[1], r, size); err != nil {
					return 0, err
				}
			}
			return m.pc + 1, nil
		}
		return true, nil
	case "INC", "DEC", "NEG", "NOT":
		if size == 0 {
			return false, nil
		}
		if n == 1 && isGM(&a[0]) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				x, err := m.readInt(&in.args[0], size)
				if err != nil {
					return 0, err
				}
				var r uint64
				switch base {
				case "INC":
					r = x + 1
					cf := m.cf
					v := m.fvalid & fCF
					m.flagsAdd(x, 1, r, size)
					m.cf, m.fvalid = cf, fZF|fSF|fOF|v // INC and DEC leave CF alone
				case "DEC":
					r = x - 1
					cf := m.cf
					v := m.fvalid & fCF
					m.flagsSub(x, 1, r, size)
					m.cf, m.fvalid = cf, fZF|fSF|fOF|v
				case "NEG":
					r = -x
					m.flagsSub(0, x, r, size)
				case "NOT":
					r = ^x
				}
				if err := m.writeInt(&in.args[0], r, size); err != nil {
					return 0, err
				}
				return m.pc + 1, nil
			}
		}
		return true, nil
	case "SHL", "SHR", "SAR":
		if size == 0 {
			return false, nil
		}
		if n == 2 && (isI(&a[0]) || (a[0].kind == kGPR && a[0].reg == regCL)) && isGM(&a[1]) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				c, err := m.readInt(&in.args[0], 1)
				if err != nil {
					return 0, err
				}
				bitsN := uint64(8 * size)
				c &= bitsN - 1 // the count is masked to 6 (64-bit) or 5 bits
				x, err := m.readInt(&in.args[1], size)
				if err != nil {
					return 0, err
				}
				var r uint64
				var cf bool
				switch base {
				case "SHL":
					r = x << c
					if c > 0 {
						cf = x>>(bitsN-c)&1 != 0
					}
				case "SHR":
					r = x >> c
					if c > 0 {
						cf = x>>(c-1)&1 != 0
					}
				case "SAR":
					sx := int64(x<<(64-bitsN)) >> (64 - bitsN)
					r = uint64(sx >> c)
					if c > 0 {
						cf = uint64(sx>>(c-1))&1 != 0
					}
				}
				r &= ones(size)
				if err := m.writeInt(&in.args[1], r, size); err != nil {
					return 0, err
				}
				if c == 0 {
					return m.pc + 1, nil // flags unchanged
				}
				m.setZS(r, size)
				m.cf = cf
				m.fvalid = fZF | fSF | fCF
				if c == 1 {
					msb := r>>(bitsN-1)&1 != 0
					switch base {
					case "SHL":
						m.of = msb != cf
					case "SHR":
						m.of = x>>(bitsN-1)&1 != 0
					case "SAR":
						m.of = false
					}
					m.fvalid |= fOF
				}
				return m.pc + 1, nil
			}
		}
		return true, nil
	case "LEA":
		if size == 0 {
			return false, nil
		}
		if n == 2 && isM(&a[0]) && isG(&a[1]) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				m.gpr[in.args[1].reg] = m.addr(&in.args[0]) & ones(size)
				return m.pc + 1, nil
			}
		}
		return true, nil
	case "IMUL3":
		if size == 8 && n == 3 && isI(&a[0]) && isGM(&a[1]) && isG(&a[2]) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				x, err := m.readInt(&in.args[1], 8)
				if err != nil {
					return 0, err
				}
				m.imul(in.args[2].reg, int64(x), in.args[0].imm)
				return m.pc + 1, nil
			}
			return true, nil
		}
		return true, nil
	case "IMUL":
		if size == 8 && n == 2 && isGM(&a[0]) && isG(&a[1]) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				x, err := m.readInt(&in.args[0], 8)
				if err != nil {
					return 0, err
				}
				m.imul(in.args[1].reg, int64(m.gpr[in.args[1].reg]), int64(x))
				return m.pc + 1, nil
			}
		}
		return true, nil
	case "DIV":
		if size == 8 && n == 1 && isGM(&a[0]) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				d, err := m.readInt(&in.args[0], 8)
				if err != nil {
					return 0, err
				}
				hi, lo := m.gpr[2], m.gpr[0]
				if d == 0 || hi >= d {
					return 0, m.fail("#DE: divide error (RDX:RAX = %#x:%#x, divisor %#x)", hi, lo, d)
				}
				q, r := bits.Div64(hi, lo, d)
				m.gpr[0], m.gpr[2] = q, r
				m.fvalid = 0 // all flags undefined
				return m.pc + 1, nil
			}
		}
		return true, nil
	}
	return false, nil
}

// imul sets register d to x*y (signed, truncated); CF = OF = overflow, SF and ZF undefined.
func (m *Machine) imul(d int, x, y int64) {
	hi, lo := bits.Mul64(uint64(x), uint64(y))
	// signed high part
	if x < 0 {
		hi -= uint64(y)
	}
	if y < 0 {
		hi -= uint64(x)
	}
	ov := !(hi == 0 && int64(lo) >= 0) && !(hi == ^uint64(0) && int64(lo) < 0)
	m.gpr[d] = lo
	m.cf, m.of = ov, ov
	m.fvalid = fCF | fOF
}

package emu

import (
	"fmt"
	"strings"
	"unsafe"
)

// inst is one decoded instruction.
type inst struct {
	line    int
	text    string
	op      string
	args    []operand
	zeroing bool // .Z: zero masking
	bcst    bool // .BCST: embedded broadcast
	bad     string
	mask    int // opmask register of EVEX masking, 0 for none
	width   int // vector width in bytes
	target  int // branch target
	exec    func(m *Machine, in *inst) (int, error)
}

func (in *inst) unsupported(format string, args ...any) error {
	return fmt.Errorf("emu: line %d: %q: %s", in.line, in.text, fmt.Sprintf(format, args...))
}

// Flag bits of fvalid.
const (
	fZF = 1 << iota
	fSF
	fCF
	fOF
	fAll = fZF | fSF | fCF | fOF
)

func (m *Machine) setZS(r uint64, n int) {
	sh := uint(64 - 8*n)
	m.zf = r<<sh == 0
	m.sf = (r<<sh)>>63 != 0
}

func (m *Machine) flagsAdd(a, b, r uint64, n int) {
	sh := uint(64 - 8*n)
	a, b, r = a<<sh, b<<sh, r<<sh
	m.zf, m.sf = r == 0, r>>63 != 0
	m.cf = r < a
	m.of = ((a^r)&(b^r))>>63 != 0
	m.fvalid = fAll
}

func (m *Machine) flagsSub(a, b, r uint64, n int) {
	sh := uint(64 - 8*n)
	a, b, r = a<<sh, b<<sh, r<<sh
	m.zf, m.sf = r == 0, r>>63 != 0
	m.cf = a < b
	m.of = ((a^b)&(a^r))>>63 != 0
	m.fvalid = fAll
}

func (m *Machine) flagsLogic(r uint64, n int) {
	m.setZS(r, n)
	m.cf, m.of = false, false
	m.fvalid = fAll
}

// conditions: name -> (flags needed, test)
type cond struct {
	need uint8
	f    func(m *Machine) bool
}

var conds = map[string]cond{
	"EQ": {fZF, func(m *Machine) bool { return m.zf }},
	"NE": {fZF, func(m *Machine) bool { return !m.zf }},
	"LT": {fSF | fOF, func(m *Machine) bool { return m.sf != m.of }},
	"GE": {fSF | fOF, func(m *Machine) bool { return m.sf == m.of }},
	"LE": {fZF | fSF | fOF, func(m *Machine) bool { return m.zf || m.sf != m.of }},
	"GT": {fZF | fSF | fOF, func(m *Machine) bool { return !m.zf && m.sf == m.of }},
	"CS": {fCF, func(m *Machine) bool { return m.cf }},
	"CC": {fCF, func(m *Machine) bool { return !m.cf }},
	"HI": {fCF | fZF, func(m *Machine) bool { return !m.cf && !m.zf }},
	"LS": {fCF | fZF, func(m *Machine) bool { return m.cf || m.zf }},
	"MI": {fSF, func(m *Machine) bool { return m.sf }},
	"PL": {fSF, func(m *Machine) bool { return !m.sf }},
	"OS": {fOF, func(m *Machine) bool { return m.of }},
	"OC": {fOF, func(m *Machine) bool { return !m.of }},
}

// condAlias maps Go's alternative spellings to the names above.
var condAlias = map[string]string{
	"Z": "EQ", "NZ": "NE", "E": "EQ", "L": "LT", "G": "GT", "B": "CS", "AE": "CC", "A": "HI", "BE": "LS",
	"NB": "CC", "NAE": "CS", "NBE": "HI", "NA": "LS", "S": "MI", "NS": "PL", "O": "OS", "NO": "OC",
	"C": "CS", "NC": "CC", "NGE": "LT", "NL": "GE", "NG": "LE", "NLE": "GT",
}

func lookupCond(s string) (cond, bool) {
	if a, ok := condAlias[s]; ok {
		s = a
	}
	c, ok := conds[s]
	return c, ok
}

func (m *Machine) test(c cond) (bool, error) {
	if m.fvalid&c.need != c.need {
		return false, m.fail("reads flags the previous flag-setting instruction left undefined (or no instruction set)")
	}
	return c.f(m), nil
}

// addr computes the effective address of a memory operand.
func (m *Machine) addr(o *operand) uint64 {
	switch o.mem {
	case memReg:
		a := m.gpr[o.base] + uint64(o.disp)
		if o.index >= 0 {
			a += m.gpr[o.index] * uint64(o.scale)
		}
		return a
	case memFP:
		return m.fp + uint64(o.disp)
	case memPseudoSP:
		return m.gpr[4] + uint64(m.fn.frame) + uint64(o.disp)
	}
	return o.symAddr() + uint64(o.disp)
}

// readInt reads an n-byte integer source (register, immediate, memory).
func (m *Machine) readInt(o *operand, n int) (uint64, error) {
	switch o.kind {
	case kGPR:
		if o.reg == regCL {
			return m.gpr[1] & 0xFF, nil
		}
		return m.gpr[o.reg] & ones(n), nil
	case kImm:
		return uint64(o.imm) & ones(n), nil
	}
	return m.load64(m.addr(o), n)
}

// writeInt writes an n-byte integer to a register (32-bit writes zero-extend) or memory.
func (m *Machine) writeInt(o *operand, v uint64, n int) error {
	if o.kind == kGPR {
		m.gpr[o.reg] = v & ones(n)
		return nil
	}
	return m.store64(m.addr(o), v, n)
}

func ones(n int) uint64 {
	if n >= 8 {
		return ^uint64(0)
	}
	return 1<<(8*uint(n)) - 1
}

func isG(o *operand) bool   { return o.kind == kGPR && o.reg != regCL }
func isI(o *operand) bool   { return o.kind == kImm }
func isM(o *operand) bool   { return o.kind == kMem }
func isV(o *operand) bool   { return o.kind == kVec }
func isK(o *operand) bool   { return o.kind == kMask }
func isVM(o *operand) bool  { return o.kind == kVec || o.kind == kMem }
func isGM(o *operand) bool  { return isG(o) || isM(o) }
func isGIM(o *operand) bool { return isG(o) || isI(o) || isM(o) }

func (o *operand) symAddr() uint64 { return uint64(uintptr(unsafe.Pointer(&o.symp.mem[0]))) }

// active returns the lanes an instruction operates on: its opmask, or all nl lanes.
func (m *Machine) active(in *inst, nl int) uint64 {
	all := ones8(nl)
	if in.mask == 0 {
		return all
	}
	return m.k[in.mask] & all
}

func ones8(nl int) uint64 {
	if nl >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(nl) - 1
}

// vsrc loads vector source o (w bytes, lanes of es bytes) into t. Memory is
// read only for the active lanes (EVEX fault suppression); with .BCST one
// element is read and replicated.
func (m *Machine) vsrc(in *inst, o *operand, w, es int, t *vec, act uint64) error {
	if o.kind == kVec {
		*t = m.v[o.reg]
		return nil
	}
	a := m.addr(o)
	nl := w / es
	tb := t.b()
	if in.bcst {
		if act == 0 {
			return nil
		}
		if err := m.load(a, tb[:es]); err != nil {
			return err
		}
		for i := 1; i < nl; i++ {
			copy(tb[i*es:(i+1)*es], tb[:es])
		}
		return nil
	}
	if act == ones8(nl) {
		return m.load(a, tb[:w])
	}
	for i := 0; i < nl; i++ {
		if act>>uint(i)&1 != 0 {
			if err := m.load(a+uint64(i*es), tb[i*es:(i+1)*es]); err != nil {
				return err
			}
		}
	}
	return nil
}

// vdst writes result r (w bytes, lanes of es bytes) to vector register d
// with the instruction's masking (merge, or zero with .Z) and zeroes the
// bits above w (VEX and EVEX semantics).
func (m *Machine) vdst(in *inst, d int, r *vec, w, es int, act uint64) {
	dst := &m.v[d]
	if in.mask == 0 {
		copy(dst.b()[:w], r.b()[:w])
	} else {
		nl := w / es
		db, rb := dst.b(), r.b()
		for i := 0; i < nl; i++ {
			switch {
			case act>>uint(i)&1 != 0:
				copy(db[i*es:(i+1)*es], rb[i*es:(i+1)*es])
			case in.zeroing:
				clear(db[i*es : (i+1)*es])
			}
		}
	}
	clear(dst.b()[w:])
}

// compile checks the operand form of in and sets its executor.
func compile(p *Program, f *function, in *inst) error {
	if in.bad != "" {
		return in.unsupported("%s", in.bad)
	}
	// A K register right before the destination of a vector instruction is its writemask.
	if n := len(in.args); n >= 2 && isK(&in.args[n-2]) && !strings.HasPrefix(in.op, "K") && !isK(&in.args[n-1]) {
		in.mask = in.args[n-2].reg
		if in.mask == 0 {
			return in.unsupported("K0 is not a writemask")
		}
		in.args = append(in.args[:n-2:n-2], in.args[n-1])
	} else if n >= 3 && isK(&in.args[n-2]) && isK(&in.args[n-1]) && !strings.HasPrefix(in.op, "K") {
		// compare into K under a writemask
		in.mask = in.args[n-2].reg
		in.args = append(in.args[:n-2:n-2], in.args[n-1])
	}
	if in.zeroing && in.mask == 0 {
		return in.unsupported(".Z without a writemask")
	}
	for i := range in.args {
		if o := &in.args[i]; o.kind == kMem && o.mem == memSym && in.op != "CALL" { // a CALL names a routine
			s, ok := p.data[o.sym]
			if !ok {
				return in.unsupported("unknown data symbol %s", o.sym)
			}
			o.symp = s
		}
	}
	if err := compileOp(f, in); err != nil {
		return err
	}
	if in.exec == nil {
		return in.unsupported("%s with operands (%s) is not modeled", in.op, form(in.args))
	}
	if (in.mask != 0 || in.bcst) && !evexOps[in.op] {
		return in.unsupported("%s with a writemask or broadcast is not modeled", in.op)
	}
	return nil
}

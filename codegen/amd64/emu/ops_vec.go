package emu

import (
	"math"
	"strings"
)

// evexOps are the instructions that take a writemask or embedded broadcast.
var evexOps = map[string]bool{}

func init() {
	for _, s := range strings.Fields(`VADDPS VADDPD VSUBPS VSUBPD VMULPS VMULPD VDIVPS VDIVPD VMAXPS VMAXPD VMINPS VMINPD
		VXORPS VXORPD VORPS VORPD VANDPS VANDPD VANDNPS VANDNPD VPXORD VPXORQ VPORD VPORQ VPANDD VPANDQ VPANDND VPANDNQ
		VPADDD VPADDQ VPSUBD VPSUBQ VPSLLD VPSRLD VPSRAD VPSLLQ VPSRLQ VPSRAQ VPMULLD VPMAXSD VPMINSD
		VMOVUPS VMOVUPD VMOVDQU32 VMOVDQU64 VMOVAPS VMOVAPD
		VBROADCASTSS VBROADCASTSD VPBROADCASTD VPBROADCASTQ
		VCVTPH2PS VCVTPS2PH VCVTPS2DQ VCVTTPS2DQ VCVTDQ2PS
		VSHUFPS VSHUFPD VUNPCKLPS VUNPCKHPS VUNPCKLPD VUNPCKHPD VPERMILPS VPERMILPD
		VEXTRACTF32X4 VEXTRACTF64X2 VEXTRACTF32X8 VEXTRACTF64X4 VINSERTF32X4 VINSERTF64X2 VINSERTF32X8 VINSERTF64X4
		VPERMPS VPERMPD VPERMT2PS VPERMT2PD VPERMI2PS VPERMI2PD VSHUFF32X4 VSHUFF64X2
		VCMPPS VCMPPD VPCMPD VPCMPUD VPCMPEQD VPCMPGTD VBLENDMPS VBLENDMPD VPTERNLOGD VPTERNLOGQ
		VRNDSCALEPS VGETEXPPS VSCALEFPS VSQRTPS VSQRTPD
		VPMOVZXBD VPMOVSXBD VPMOVZXWD VPMOVSXWD VPMOVZXDQ VPMOVSXDQ VPMOVZXBQ VPMOVSXBQ VPMOVZXWQ VPMOVSXWQ`) {
		evexOps[s] = true
	}
	for _, fm := range []string{"FMADD", "FMSUB", "FNMADD", "FNMSUB"} {
		for _, o := range []string{"132", "213", "231"} {
			evexOps["V"+fm+o+"PS"] = true
			evexOps["V"+fm+o+"PD"] = true
		}
	}
}

func compileOp(f *function, in *inst) error {
	if ok, err := compileInt(f, in); ok || err != nil {
		return err
	}
	if ok, err := compileK(in); ok || err != nil {
		return err
	}
	return compileVec(in)
}

// elemSize returns the lane size of a packed mnemonic from its suffix.
func elemSize(op string) int {
	switch {
	case strings.HasPrefix(op, "VP") && !strings.HasPrefix(op, "VPERM"): // integer: VPADDD, VPCMPD, VPXORQ ...
		if strings.HasSuffix(op, "D") {
			return 4
		}
		return 8
	case strings.HasSuffix(op, "PS"), strings.HasSuffix(op, "SS"):
		return 4
	}
	return 8
}

// lanewise is an element-by-element instruction: Go operands
// [x (vector, memory or broadcast), y (vector), d] or [x, d] (unary).
type lanewise struct {
	es     int
	xi, yi int // operand indexes; yi < 0: unary
	scalar bool
	upper  int // scalar: the operand whose lanes 1.. (of the low 128 bits) pass through
	f32    func(x, y, d uint32) uint32
	f64    func(x, y, d uint64) uint64
}

func (lw *lanewise) run(m *Machine, in *inst) (int, error) {
	w := in.width
	es := lw.es
	nl := w / es
	act := m.active(in, nl)
	var x vec
	if lw.scalar {
		nl, act = 1, 1
		if err := m.vsrc(in, &in.args[lw.xi], es, es, &x, 1); err != nil {
			return 0, err
		}
	} else if err := m.vsrc(in, &in.args[lw.xi], w, es, &x, act); err != nil {
		return 0, err
	}
	y := &x
	if lw.yi >= 0 {
		y = &m.v[in.args[lw.yi].reg]
	}
	dreg := in.args[len(in.args)-1].reg
	d := &m.v[dreg]
	var r vec
	if lw.scalar {
		r = m.v[in.args[lw.upper].reg]
	}
	if es == 4 {
		xs, ys, ds, rs := x.u32(), y.u32(), d.u32(), r.u32()
		if act == ones8(nl) {
			for i := 0; i < nl; i++ {
				rs[i] = lw.f32(xs[i], ys[i], ds[i])
			}
		} else {
			for i := 0; i < nl; i++ {
				if act>>uint(i)&1 != 0 {
					rs[i] = lw.f32(xs[i], ys[i], ds[i])
				}
			}
		}
	} else {
		xs, ys, ds, rs := x.u64(), y.u64(), d.u64(), r.u64()
		for i := 0; i < nl; i++ {
			if act>>uint(i)&1 != 0 {
				rs[i] = lw.f64(xs[i], ys[i], ds[i])
			}
		}
	}
	if lw.scalar {
		m.vdst(in, dreg, &r, 16, es, act)
	} else {
		m.vdst(in, dreg, &r, w, es, act)
	}
	return m.pc + 1, nil
}

// sameWidth reports whether the vector operands among idx all have width w.
func sameWidth(a []operand, w int, idx ...int) bool {
	for _, i := range idx {
		if a[i].kind == kVec && a[i].width != w {
			return false
		}
	}
	return true
}

type arith struct {
	f32 func(s1, s2 uint32) uint32
	f64 func(s1, s2 uint64) uint64
}

var ariths = map[string]arith{
	"ADD": {add32, add64}, "SUB": {sub32, sub64}, "MUL": {mul32, mul64}, "DIV": {div32, div64},
	"MAX": {max32, max64}, "MIN": {min32, min64},
}

var bitops = map[string]func(x, y uint64) uint64{
	"XOR":  func(x, y uint64) uint64 { return x ^ y },
	"OR":   func(x, y uint64) uint64 { return x | y },
	"AND":  func(x, y uint64) uint64 { return x & y },
	"ANDN": func(x, y uint64) uint64 { return ^y & x },
}

// compile3 sets in up as a lanewise 3-operand instruction [x, y, d].
func compile3(in *inst, lw *lanewise) {
	a := in.args
	if len(a) != 3 || !isVM(&a[0]) || !isV(&a[1]) || !isV(&a[2]) || !sameWidth(a, a[2].width, 0, 1) {
		return
	}
	if in.bcst && !isM(&a[0]) {
		return
	}
	in.width = a[2].width
	lw.xi, lw.yi = 0, 1
	in.exec = lw.run
}

// compile2 sets in up as a lanewise unary instruction [x, d] (after an immediate, if any).
func compile2(in *inst, lw *lanewise, first int) {
	a := in.args
	if len(a) != first+2 || !isVM(&a[first]) || !isV(&a[first+1]) || !sameWidth(a, a[first+1].width, first) {
		return
	}
	in.width = a[first+1].width
	lw.xi, lw.yi = first, -1
	in.exec = lw.run
}

func compileVec(in *inst) error {
	op := in.op
	a := in.args
	n := len(a)
	// Packed and scalar float arithmetic: VADDPS, VMAXPD, VADDSS ...
	if strings.HasPrefix(op, "V") && len(op) >= 6 {
		body, suf := op[1:len(op)-2], op[len(op)-2:]
		if ar, ok := ariths[body]; ok {
			switch suf {
			case "PS":
				compile3(in, &lanewise{es: 4, f32: func(x, y, d uint32) uint32 { return ar.f32(y, x) }})
			case "PD":
				compile3(in, &lanewise{es: 8, f64: func(x, y, d uint64) uint64 { return ar.f64(y, x) }})
			case "SS", "SD":
				es := 4
				if suf == "SD" {
					es = 8
				}
				lw := &lanewise{es: es, scalar: true,
					f32: func(x, y, d uint32) uint32 { return ar.f32(y, x) },
					f64: func(x, y, d uint64) uint64 { return ar.f64(y, x) }}
				if n == 3 && isVM(&a[0]) && isV(&a[1]) && isV(&a[2]) && a[1].width == 16 && a[2].width == 16 && (isM(&a[0]) || a[0].width == 16) && in.mask == 0 {
					in.width = 16
					lw.xi, lw.yi, lw.upper = 0, 1, 1
					in.exec = lw.run
				}
			}
			return nil
		}
		if fm, ok := fmaForms[body]; ok {
			return compileFMA(in, fm, suf)
		}
	}
	switch op {
	case "VXORPS", "VXORPD", "VORPS", "VORPD", "VANDPS", "VANDPD", "VANDNPS", "VANDNPD",
		"VPXORD", "VPXORQ", "VPORD", "VPORQ", "VPANDD", "VPANDQ", "VPANDND", "VPANDNQ", "VPXOR", "VPOR", "VPAND", "VPANDN":
		name, es := op[1:], 8
		switch {
		case op == "VPAND" || op == "VPANDN" || op == "VPOR" || op == "VPXOR": // VEX, no lanes
			name = op[2:]
		case strings.HasSuffix(op, "PS"):
			name, es = op[1:len(op)-2], 4
		case strings.HasSuffix(op, "PD"):
			name = op[1 : len(op)-2]
		case strings.HasSuffix(op, "D"):
			name, es = op[2:len(op)-1], 4
		default: // VP...Q
			name = op[2 : len(op)-1]
		}
		bf := bitops[name]
		if bf == nil {
			return nil
		}
		compile3(in, &lanewise{es: es,
			f32: func(x, y, d uint32) uint32 { return uint32(bf(uint64(x), uint64(y))) },
			f64: func(x, y, d uint64) uint64 { return bf(x, y) }})
	case "VPADDD", "VPADDQ", "VPSUBD", "VPSUBQ", "VPMULLD", "VPCMPGTD", "VPCMPGTQ", "VPCMPEQD", "VPCMPEQQ", "VPMAXSD", "VPMINSD":
		if strings.HasPrefix(op, "VPCMP") && (n != 3 || !isV(&a[2]) || a[2].width > 32 || in.mask != 0) {
			return nil // the vector-result compares are VEX only (EVEX ones write a K register)
		}
		compile3(in, &lanewise{es: elemSize(op),
			f32: func(x, y, d uint32) uint32 {
				switch op {
				case "VPADDD":
					return y + x
				case "VPSUBD":
					return y - x
				case "VPMULLD":
					return y * x
				case "VPCMPGTD":
					return bmask32(int32(y) > int32(x))
				case "VPCMPEQD":
					return bmask32(y == x)
				case "VPMAXSD":
					return uint32(max(int32(y), int32(x)))
				}
				return uint32(min(int32(y), int32(x)))
			},
			f64: func(x, y, d uint64) uint64 {
				switch op {
				case "VPADDQ":
					return y + x
				case "VPSUBQ":
					return y - x
				case "VPCMPGTQ":
					return bmask64(int64(y) > int64(x))
				}
				return bmask64(y == x)
			}})
	case "VDPBF16PS": // [src2, src1, acc], registers only (the BYTE form kgen emits)
		if n != 3 || !isV(&a[0]) {
			return nil
		}
		compile3(in, &lanewise{es: 4, f32: func(x, y, d uint32) uint32 { return dpbf16(d, y, x) }})
	case "VPSLLD", "VPSRLD", "VPSRAD", "VPSLLQ", "VPSRLQ", "VPSRAQ":
		if n != 3 || !isI(&a[0]) {
			return nil
		}
		c := uint64(a[0].imm & 0xFF)
		compile2(in, &lanewise{es: elemSize(op),
			f32: func(x, y, d uint32) uint32 {
				switch {
				case op == "VPSRAD":
					return uint32(int32(x) >> min(c, 31))
				case c > 31:
					return 0
				case op == "VPSLLD":
					return x << c
				}
				return x >> c
			},
			f64: func(x, y, d uint64) uint64 {
				switch {
				case op == "VPSRAQ":
					return uint64(int64(x) >> min(c, 63))
				case c > 63:
					return 0
				case op == "VPSLLQ":
					return x << c
				}
				return x >> c
			}}, 1)
	case "VCMPPS", "VCMPPD":
		if n == 4 && isI(&a[0]) && isK(&a[3]) {
			return compileCmpK(in)
		}
		if n != 4 || !isI(&a[0]) {
			return nil
		}
		pred := int(a[0].imm & 31)
		lw := &lanewise{es: elemSize(op),
			f32: func(x, y, d uint32) uint32 {
				s1, s2 := f32frombits(y), f32frombits(x)
				return bmask32(cmpPred(pred, float64(s1), float64(s2), nan32(x) || nan32(y)))
			},
			f64: func(x, y, d uint64) uint64 {
				return bmask64(cmpPred(pred, f64frombits(y), f64frombits(x), nan64(x) || nan64(y)))
			}}
		in.args = a[1:]
		compile3(in, lw)
		in.args = a
		if in.exec != nil {
			lw.xi, lw.yi = 1, 2
		}
	case "VROUNDPS", "VRNDSCALEPS":
		if n != 3 || !isI(&a[0]) {
			return nil
		}
		imm := a[0].imm
		if op == "VRNDSCALEPS" && imm>>4 != 0 {
			return in.unsupported("VRNDSCALEPS with a scale (imm[7:4] != 0) is not modeled")
		}
		mode := roundMode(imm)
		compile2(in, &lanewise{es: 4, f32: func(x, y, d uint32) uint32 { return round32(x, mode) }}, 1)
	case "VSQRTPS", "VSQRTPD":
		// correctly rounded; NaN quieted, negative (not -0) gives the default NaN
		compile2(in, &lanewise{es: elemSize(op),
			f32: func(x, y, d uint32) uint32 {
				if nan32(x) {
					return quiet32(x)
				}
				return res32(float32(math.Sqrt(float64(f32frombits(x)))))
			},
			f64: func(x, y, d uint64) uint64 {
				if nan64(x) {
					return quiet64(x)
				}
				return res64(math.Sqrt(f64frombits(x)))
			}}, 0)
	case "VCVTPS2DQ", "VCVTTPS2DQ":
		mode := 0
		if op == "VCVTTPS2DQ" {
			mode = 3
		}
		compile2(in, &lanewise{es: 4, f32: func(x, y, d uint32) uint32 { return cvtps2dq(x, mode) }}, 0)
	case "VCVTDQ2PS":
		compile2(in, &lanewise{es: 4, f32: func(x, y, d uint32) uint32 { return f32bits(float32(int32(x))) }}, 0)
	case "VBLENDVPS", "VBLENDVPD":
		// Go: mask, x (second source), y (first source), d: d = mask<0 ? x : y
		if n == 4 && isV(&a[0]) && isVM(&a[1]) && isV(&a[2]) && isV(&a[3]) && sameWidth(a, a[3].width, 0, 1, 2) {
			in.width = a[3].width
			es := elemSize(op)
			in.exec = func(m *Machine, in *inst) (int, error) {
				w := in.width
				var x vec
				if err := m.vsrc(in, &in.args[1], w, es, &x, ones8(w/es)); err != nil {
					return 0, err
				}
				mk, y := &m.v[in.args[0].reg], &m.v[in.args[2].reg]
				var r vec
				xb, yb, mb, rb := x.b(), y.b(), mk.b(), r.b()
				for i := 0; i < w; i += es {
					if mb[i+es-1]&0x80 != 0 {
						copy(rb[i:i+es], xb[i:i+es])
					} else {
						copy(rb[i:i+es], yb[i:i+es])
					}
				}
				m.vdst(in, in.args[3].reg, &r, w, es, 0)
				return m.pc + 1, nil
			}
		}
	case "VMOVUPS", "VMOVUPD", "VMOVDQU", "VMOVDQU32", "VMOVDQU64", "VMOVAPS", "VMOVAPD":
		return compileMov(in)
	case "VBROADCASTSS", "VBROADCASTSD", "VPBROADCASTD", "VPBROADCASTQ":
		return compileBroadcast(in)
	case "VMASKMOVPS", "VMASKMOVPD":
		return compileMaskMov(in)
	case "VMOVSS", "VMOVSD", "MOVSS", "MOVSD":
		return compileMovScalar(in)
	case "VMOVD", "VMOVQ", "MOVQ", "MOVD":
		return compileMovGX(in)
	case "VCVTPH2PS", "VCVTPS2PH":
		return compileCvtPH(in)
	default:
		return compileShuffle(in)
	}
	return nil
}

func bmask32(b bool) uint32 {
	if b {
		return ^uint32(0)
	}
	return 0
}

func bmask64(b bool) uint64 {
	if b {
		return ^uint64(0)
	}
	return 0
}

// fmaForm: which Intel operands are multiplied and added (1-based), and signs.
type fmaForm struct {
	m1, m2, add   int
	negProd, negC bool
}

var fmaForms = map[string]fmaForm{}

func init() {
	for _, k := range []struct {
		name   string
		np, nc bool
	}{{"FMADD", false, false}, {"FMSUB", false, true}, {"FNMADD", true, false}, {"FNMSUB", true, true}} {
		fmaForms[k.name+"132"] = fmaForm{1, 3, 2, k.np, k.nc}
		fmaForms[k.name+"213"] = fmaForm{2, 1, 3, k.np, k.nc}
		fmaForms[k.name+"231"] = fmaForm{2, 3, 1, k.np, k.nc}
	}
}

// compileFMA: Go operands [x, y, d] are Intel operands 3, 2, 1.
func compileFMA(in *inst, fm fmaForm, suf string) error {
	pick32 := func(i int, o1, o2, o3 uint32) uint32 {
		switch i {
		case 1:
			return o1
		case 2:
			return o2
		}
		return o3
	}
	pick64 := func(i int, o1, o2, o3 uint64) uint64 {
		switch i {
		case 1:
			return o1
		case 2:
			return o2
		}
		return o3
	}
	lw := &lanewise{
		f32: func(x, y, d uint32) uint32 {
			a, b, c := pick32(fm.m1, d, y, x), pick32(fm.m2, d, y, x), pick32(fm.add, d, y, x)
			return fmaLane32(a, b, c, a, b, c, fm.negProd, fm.negC)
		},
		f64: func(x, y, d uint64) uint64 {
			a, b, c := pick64(fm.m1, d, y, x), pick64(fm.m2, d, y, x), pick64(fm.add, d, y, x)
			return fmaLane64(a, b, c, a, b, c, fm.negProd, fm.negC)
		},
	}
	a := in.args
	switch suf {
	case "PS", "PD":
		lw.es = 4
		if suf == "PD" {
			lw.es = 8
		}
		compile3(in, lw)
	case "SS", "SD":
		lw.es, lw.scalar = 4, true
		if suf == "SD" {
			lw.es = 8
		}
		if len(a) == 3 && isVM(&a[0]) && isV(&a[1]) && isV(&a[2]) && a[1].width == 16 && a[2].width == 16 && (isM(&a[0]) || a[0].width == 16) && in.mask == 0 {
			in.width = 16
			lw.xi, lw.yi, lw.upper = 0, 1, 2 // lanes 1.. of the result come from Intel operand 1, the destination
			in.exec = lw.run
		}
	}
	return nil
}

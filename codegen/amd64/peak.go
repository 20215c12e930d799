package amd64

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// emitPeak emits func p.Name(iters int): iters iterations of Chains
// independent FMAs acc_i += x*y on registers only. Chains >= latency ×
// throughput (4 × 2 on Zen 3 and Intel cores) keeps both FMA pipes busy.
func emitPeak(c *build.Context, p PeakKernel) {
	z := p.ISA == AVX512
	chains := p.ChainsOrDefault()
	c.Function(p.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(fmt.Sprintf("%s runs iters iterations of %d independent %s FMA chains (%s, %d flops per iteration).",
		p.Name, chains, p.ISA, p.Elem, p.FlopsPerIter()))
	c.SignatureExpr("func(iters int)")

	v := func(i int) reg.VecPhysical { return vecReg(z, i) }
	fma := c.VFMADD231PS
	if p.Elem == F64 {
		fma = c.VFMADD231PD
	}
	c.Load(c.Param("iters"), reg.RCX)
	for i := 0; i < chains+2; i++ {
		zero(c, z, v(i))
	}
	c.TESTQ(reg.RCX, reg.RCX)
	c.JLE(operand.LabelRef("done"))
	c.Label("loop")
	for i := 0; i < chains; i++ {
		fma(v(0), v(1), v(2+i))
	}
	c.DECQ(reg.RCX)
	c.JNZ(operand.LabelRef("loop"))
	c.Label("done")
	c.VZEROUPPER()
	c.RET()
}

// vecReg returns ymm i (z false) or zmm i (z true).
func vecReg(z bool, i int) reg.VecPhysical {
	s := reg.S256
	if z {
		s = reg.S512
	}
	return reg.Vector.Lookup(reg.Index(i), s).(reg.VecPhysical)
}

// xmmOf returns the xmm register aliasing v.
func xmmOf(v reg.VecPhysical) reg.VecPhysical {
	return reg.Vector.Lookup(v.PhysicalIndex(), reg.S128).(reg.VecPhysical)
}

// zero clears v: VXORPS for ymm (VEX, AVX), VPXORD for zmm (AVX512F; VXORPS
// on zmm would need AVX512DQ).
func zero(c *build.Context, z bool, v reg.VecPhysical) {
	if z {
		c.VPXORD(v, v, v)
	} else {
		c.VXORPS(v, v, v)
	}
}

// ymmOf returns the ymm register aliasing v.
func ymmOf(v reg.VecPhysical) reg.VecPhysical {
	return reg.Vector.Lookup(v.PhysicalIndex(), reg.S256).(reg.VecPhysical)
}

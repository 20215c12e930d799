package emu

import "testing"

// FuzzParseRun: no text makes Parse or a run panic; bad input is an error.
func FuzzParseRun(f *testing.F) {
	f.Add(sumText)
	f.Add("TEXT ·f(SB), 0, $8-16\n\tMOVQ a+0(FP), AX\n\tVMOVUPS.Z (AX)(BX*4), K1, Z0\n\tKMOVW AX, K1\n\tVFMADD231PS.BCST 4(AX), Z1, K1, Z2\n\tRET\n")
	f.Add("DATA x<>+0(SB)/8, $-1\nGLOBL x<>(SB), 8, $8\nTEXT ·g(SB), 0, $0-0\n\tVBROADCASTSS x<>+4(SB), Y0\n\tSHLQ CL, AX\n\tDIVQ CX\n\tRET\n")
	f.Add("TEXT ·h(SB), 0, $0-0\nl:\n\tCMPQ AX, $3\n\tCMOVQLT BX, CX\n\tJGE l\n\tVPERM2F128 $0x31, Y0, Y1, Y2\n\tVCVTPS2PH $4, Y0, 8(SP)\n")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text)
		if err != nil {
			return
		}
		_ = p.Check()
		for _, name := range p.Functions() {
			fn := p.funcs[name]
			if fn.err != nil {
				continue
			}
			m := p.Machine()
			m.MaxSteps = 5000
			_ = m.run(fn, make([]uint64, fn.argsize/8+1), nil)
		}
	})
}

//go:build ignore

// gen writes probe_amd64.s and probe_amd64.go: one tiny routine per probed
// instruction form. Each routine loads Z0, Z1, Z2 from a, b, c and K1 from k,
// runs the instruction(s) and stores Z2 back to c (unless the probe stores
// to (CX) itself), so the whole 512-bit result, upper bits included, is
// compared between the CPU and the interpreter.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

type probe struct {
	name  string
	elem  int // lane size of the random operands: 2, 4 or 8
	isa   string
	store bool // the instructions store to (CX) themselves
	code  string
	ymm   bool // the frame loads and stores Y registers only (no AVX-512)
}

func main() {
	var ps []probe
	add := func(name string, elem int, isa string, code string) {
		ps = append(ps, probe{name: name, elem: elem, isa: isa, code: code})
	}
	addStore := func(name string, elem int, isa string, code string) {
		ps = append(ps, probe{name: name, elem: elem, isa: isa, code: code, store: true})
	}
	for _, op := range []string{"ADD", "SUB", "MUL", "DIV", "MAX", "MIN"} {
		for _, t := range []struct {
			s string
			e int
		}{{"PS", 4}, {"PD", 8}} {
			n := "V" + op + t.s
			add(n+"_X", t.e, "avx2", n+" X0, X1, X2")
			add(n+"_Y", t.e, "avx2", n+" Y0, Y1, Y2")
			add(n+"_Ym", t.e, "avx2", n+" (AX), Y1, Y2")
			add(n+"_Z", t.e, "avx512", n+" Z0, Z1, Z2")
			add(n+"_Zk", t.e, "avx512", n+" Z0, Z1, K1, Z2")
			add(n+"_Zkz", t.e, "avx512", n+".Z Z0, Z1, K1, Z2")
			add(n+"_Zmk", t.e, "avx512", n+" (AX), Z1, K1, Z2")
			add(n+"_Zb", t.e, "avx512", n+".BCST (AX), Z1, Z2")
		}
	}
	for _, f := range []string{"VFMADD231", "VFMADD213", "VFMADD132", "VFNMADD231", "VFMSUB231", "VFNMSUB231"} {
		for _, t := range []struct {
			s string
			e int
		}{{"PS", 4}, {"PD", 8}} {
			n := f + t.s
			add(n+"_Y", t.e, "avx2", n+" Y0, Y1, Y2")
			add(n+"_Ym", t.e, "avx2", n+" (AX), Y1, Y2")
			add(n+"_Z", t.e, "avx512", n+" Z0, Z1, Z2")
			add(n+"_Zmk", t.e, "avx512", n+" (AX), Z1, K1, Z2")
			add(n+"_Zkz", t.e, "avx512", n+".Z Z0, Z1, K1, Z2")
		}
	}
	add("VFMADD231SS", 4, "avx2", "VFMADD231SS X0, X1, X2")
	add("VFMADD231SD", 8, "avx2", "VFMADD231SD X0, X1, X2")
	for _, op := range []string{"VXORPS", "VORPS", "VANDPS", "VANDNPS"} {
		add(op+"_Y", 4, "avx2", op+" Y0, Y1, Y2")
	}
	for _, op := range []string{"VPXORD", "VPORD", "VPANDD", "VPXORQ"} {
		add(op+"_Z", 4, "avx512", op+" Z0, Z1, Z2")
		add(op+"_Zk", 4, "avx512", op+" Z0, Z1, K1, Z2")
	}
	for _, op := range []string{"VPADDD", "VPSUBD", "VPCMPGTD", "VPCMPEQD"} {
		add(op+"_Y", 4, "avx2", op+" Y0, Y1, Y2")
		if op == "VPADDD" || op == "VPSUBD" {
			add(op+"_Z", 4, "avx512", op+" Z0, Z1, K1, Z2")
		}
	}
	add("VPCMPGTQ_Y", 8, "avx2", "VPCMPGTQ Y0, Y1, Y2")
	for _, op := range []string{"VPSLLD", "VPSRLD", "VPSRAD"} {
		for _, c := range []int{0, 1, 13, 31, 32, 200} {
			add(fmt.Sprintf("%s_%d", op, c), 4, "avx2", fmt.Sprintf("%s $%d, Y0, Y2", op, c))
		}
		add(op+"_Z", 4, "avx512", op+" $7, Z0, K1, Z2")
	}
	for p := 0; p < 32; p++ {
		add(fmt.Sprintf("VCMPPS_%d", p), 4, "avx2", fmt.Sprintf("VCMPPS $%d, Y0, Y1, Y2", p))
		add(fmt.Sprintf("VCMPPSK_%d", p), 4, "avx512", fmt.Sprintf("VCMPPS $%d, Z0, Z1, K2\n\tVMOVUPS.Z Z0, K2, Z2", p))
	}
	add("VCMPPS_X", 4, "avx2", "VCMPPS $3, X0, X1, X2")
	add("VCMPPD_Y", 8, "avx2", "VCMPPD $1, Y0, Y1, Y2")
	add("VBLENDVPS", 4, "avx2", "VBLENDVPS Y0, Y1, Y2, Y2")
	add("VBLENDVPSm", 4, "avx2", "VBLENDVPS Y0, (BX), Y2, Y2")
	for _, w := range []string{"X", "Y", "Z"} {
		isa := "avx2"
		if w == "Z" {
			isa = "avx512"
		}
		add("VBROADCASTSS_m"+w, 4, isa, "VBROADCASTSS (AX), "+w+"2")
		add("VBROADCASTSS_r"+w, 4, isa, "VBROADCASTSS X0, "+w+"2")
		if w != "X" {
			add("VBROADCASTSD_m"+w, 8, isa, "VBROADCASTSD (AX), "+w+"2")
		}
		add("VPBROADCASTD_"+w, 4, isa, "VPBROADCASTD X0, "+w+"2")
		add("VPBROADCASTQ_"+w, 8, isa, "VPBROADCASTQ X0, "+w+"2")
	}
	add("VBROADCASTSS_Zk", 4, "avx512", "VBROADCASTSS (AX), K1, Z2")
	add("VPBROADCASTD_g", 4, "avx512", "MOVQ (AX), R8\n\tVPBROADCASTD R8, Z2")
	for _, t := range []struct {
		s string
		e int
	}{{"PS", 4}, {"PD", 8}} {
		n := "VMOVU" + t.s
		add(n+"_ldY", t.e, "avx2", n+" (AX), Y2")
		add(n+"_ldX", t.e, "avx2", n+" (AX), X2")
		add(n+"_ldZk", t.e, "avx512", n+" (AX), K1, Z2")
		add(n+"_ldZkz", t.e, "avx512", n+".Z (AX), K1, Z2")
		add(n+"_ldYkz", t.e, "avx512", n+".Z (AX), K1, Y2")
		add(n+"_rrYk", t.e, "avx512", n+" Y0, K1, Y2")
		addStore(n+"_stZk", t.e, "avx512", n+" Z0, K1, (CX)")
		addStore(n+"_stY", t.e, "avx2", n+" Y0, (CX)")
		add("VMASKMOV"+t.s+"_ld", t.e, "avx2", "VMASKMOV"+t.s+" (AX), Y1, Y2")
		add("VMASKMOV"+t.s+"_ldX", t.e, "avx2", "VMASKMOV"+t.s+" (AX), X1, X2")
		addStore("VMASKMOV"+t.s+"_st", t.e, "avx2", "VMASKMOV"+t.s+" Y0, Y1, (CX)")
	}
	add("VMOVDQU_ld", 4, "avx2", "VMOVDQU (AX), Y2")
	addStore("VMOVDQU_st", 4, "avx2", "VMOVDQU Y0, (CX)")
	for _, s := range []struct {
		n string
		e int
	}{{"SS", 4}, {"SD", 8}} {
		add("VMOV"+s.n+"_ld", s.e, "avx2", "VMOV"+s.n+" (AX), X2")
		addStore("VMOV"+s.n+"_st", s.e, "avx2", "VMOV"+s.n+" X0, (CX)")
		add("VMOV"+s.n+"_rr", s.e, "avx2", "VMOV"+s.n+" X0, X1, X2")
		add("MOV"+s.n+"_ld", s.e, "avx2", "MOV"+s.n+" (AX), X2")
		add("MOV"+s.n+"_rr", s.e, "avx2", "MOV"+s.n+" X0, X2")
		addStore("MOV"+s.n+"_st", s.e, "avx2", "MOV"+s.n+" X0, (CX)")
	}
	add("VMOVD_g", 4, "avx2", "MOVQ (AX), R8\n\tVMOVD R8, X2")
	add("VMOVQ_g", 8, "avx2", "MOVQ (AX), R8\n\tVMOVQ R8, X2")
	add("VCVTPH2PS_X", 2, "avx2", "VCVTPH2PS X0, Y2")
	add("VCVTPH2PS_m", 2, "avx2", "VCVTPH2PS (AX), Y2")
	add("VCVTPH2PS_Z", 2, "avx512", "VCVTPH2PS Y0, Z2")
	for imm := 0; imm < 8; imm++ {
		add(fmt.Sprintf("VCVTPS2PH_%d", imm), 4, "avx2", fmt.Sprintf("VCVTPS2PH $%d, Y0, X2", imm))
		add(fmt.Sprintf("VROUNDPS_%d", imm), 4, "avx2", fmt.Sprintf("VROUNDPS $%d, Y0, Y2", imm))
	}
	addStore("VCVTPS2PH_m", 4, "avx2", "VCVTPS2PH $0, Y0, (CX)")
	add("VCVTPS2PH_Z", 4, "avx512", "VCVTPS2PH $4, Z0, Y2")
	add("VROUNDPS_8", 4, "avx2", "VROUNDPS $8, Y0, Y2")
	add("VCVTPS2DQ", 4, "avx2", "VCVTPS2DQ Y0, Y2")
	add("VCVTTPS2DQ", 4, "avx2", "VCVTTPS2DQ Y0, Y2")
	add("VCVTDQ2PS", 4, "avx2", "VCVTDQ2PS Y0, Y2")
	for _, imm := range []int{0x00, 0x0e, 0x01, 0x1b, 0xe4, 0x4e, 0xb1} {
		add(fmt.Sprintf("VPERMILPS_X%x", imm), 4, "avx2", fmt.Sprintf("VPERMILPS $%#x, X0, X2", imm))
		add(fmt.Sprintf("VPERMILPS_Y%x", imm), 4, "avx2", fmt.Sprintf("VPERMILPS $%#x, Y0, Y2", imm))
		add(fmt.Sprintf("VSHUFPS_%x", imm), 4, "avx2", fmt.Sprintf("VSHUFPS $%#x, Y0, Y1, Y2", imm))
		add(fmt.Sprintf("VINSERTPS_r%x", imm), 4, "avx2", fmt.Sprintf("VINSERTPS $%#x, X0, X1, X2", imm))
		add(fmt.Sprintf("VINSERTPS_m%x", imm), 4, "avx2", fmt.Sprintf("VINSERTPS $%#x, (AX), X1, X2", imm))
		add(fmt.Sprintf("VSHUFF32X4_%x", imm), 4, "avx512", fmt.Sprintf("VSHUFF32X4 $%#x, Z0, Z1, Z2", imm))
		add(fmt.Sprintf("VPTERNLOGD_%x", imm), 4, "avx512", fmt.Sprintf("VPTERNLOGD $%#x, Z0, Z1, Z2", imm))
	}
	for _, imm := range []int{0x20, 0x31, 0x02, 0x13, 0x08, 0x80, 0x21, 0x30} {
		add(fmt.Sprintf("VPERM2F128_%x", imm), 4, "avx2", fmt.Sprintf("VPERM2F128 $%#x, Y0, Y1, Y2", imm))
	}
	for _, op := range []string{"VUNPCKLPS", "VUNPCKHPS", "VUNPCKLPD", "VUNPCKHPD"} {
		add(op+"_X", 4, "avx2", op+" X0, X1, X2")
		add(op+"_Y", 4, "avx2", op+" Y0, Y1, Y2")
		add(op+"_Z", 4, "avx512", op+" Z0, Z1, Z2")
	}
	add("VMOVLHPS", 4, "avx2", "VMOVLHPS X0, X1, X2")
	add("VMOVHLPS", 4, "avx2", "VMOVHLPS X0, X1, X2")
	add("VMOVHPD", 8, "avx2", "VMOVHPD (AX), X1, X2")
	add("VEXTRACTF128_0", 4, "avx2", "VEXTRACTF128 $0, Y0, X2")
	add("VEXTRACTF128_1", 4, "avx2", "VEXTRACTF128 $1, Y0, X2")
	add("VINSERTF128_1", 4, "avx2", "VINSERTF128 $1, X0, Y1, Y2")
	add("VINSERTF128_0", 4, "avx2", "VINSERTF128 $0, (AX), Y1, Y2")
	add("VZEROUPPER", 4, "avx2", "VZEROUPPER")
	add("VEXTRACTF32X8", 4, "avx512", "VEXTRACTF32X8 $1, Z0, Y2")
	add("VEXTRACTF64X4", 8, "avx512", "VEXTRACTF64X4 $1, Z0, K1, Y2")
	add("VEXTRACTF32X4", 4, "avx512", "VEXTRACTF32X4 $3, Z0, X2")
	add("VINSERTF32X8", 4, "avx512", "VINSERTF32X8 $1, Y0, Z1, Z2")
	add("VINSERTF64X4", 8, "avx512", "VINSERTF64X4 $0, Y0, Z1, K1, Z2")
	add("VPERMPS", 4, "avx512", "VPERMPS Z0, Z1, Z2")
	add("VPERMPD", 8, "avx512", "VPERMPD Z0, Z1, Z2")
	add("VPERMT2PS", 4, "avx512", "VPERMT2PS Z0, Z1, Z2")
	add("VPERMI2PS", 4, "avx512", "VPERMI2PS Z0, Z1, Z2")
	add("VPERMT2PD", 8, "avx512", "VPERMT2PD Z0, Z1, K1, Z2")
	add("VPERMI2PD", 8, "avx512", "VPERMI2PD Z0, Z1, Z2")
	add("VBLENDMPS", 4, "avx512", "VBLENDMPS Z0, Z1, K1, Z2")
	add("VBLENDMPD", 8, "avx512", "VBLENDMPD Z0, Z1, K1, Z2")
	add("VGETEXPPS", 4, "avx512", "VGETEXPPS Z0, Z2")
	add("VSCALEFPS", 4, "avx512", "VSCALEFPS Z0, Z1, Z2")
	add("VSCALEFPS_Yk", 4, "avx512", "VSCALEFPS.Z (AX), Y1, K1, Y2")
	add("VRNDSCALEPS", 4, "avx512", "VRNDSCALEPS $1, Z0, Z2")
	add("VPMOVZXBD", 4, "avx512", "VPMOVZXBD X0, Z2")
	add("VPMOVSXWD", 4, "avx512", "VPMOVSXWD Y0, Z2")
	add("VPMOVZXDQ", 4, "avx512", "VPMOVZXDQ Y0, Z2")
	add("VPCMPD", 4, "avx512", "VPCMPD $1, Z0, Z1, K2\n\tVMOVUPS.Z Z0, K2, Z2")
	add("KORTEST", 4, "avx512", "KMOVW K1, K3\n\tKSHIFTRW $3, K3, K3\n\tKORTESTW K3, K3\n\tMOVQ $0, R8\n\tMOVQ $1, R9\n\tCMOVQEQ R9, R8\n\tVMOVQ R8, X2")
	add("KMOVB", 4, "avx512", "KMOVB K1, R8\n\tVMOVQ R8, X2")
	// Flags: each flag-setting instruction on (a, b), then every condition through CMOVQ.
	for _, fl := range []struct{ name, code string }{
		{"CMPQ", "CMPQ R8, R9"}, {"CMPQi", "CMPQ R8, $0x0e"}, {"CMPQm", "CMPQ R8, (BX)"}, {"SUBQ", "SUBQ R8, R9"}, {"ADDQ", "ADDQ R8, R9"},
		{"TESTQ", "TESTQ R8, R9"}, {"ANDQ", "ANDQ $0x7f0, R9"}, {"XORQ", "XORQ R8, R9"}, {"DECQ", "DECQ R9"},
		{"SHLQ1", "SHLQ $1, R9"}, {"SHLQ5", "SHLQ $5, R9"}, {"SHRQ1", "SHRQ $1, R9"}, {"SHRQ7", "SHRQ $7, R9"},
		{"SHLQCL", "MOVQ CX, R12\n\tMOVQ R8, CX\n\tSHLQ CL, R9\n\tMOVQ R12, CX"}, {"SHLL", "SHLL $3, R9"},
	} {
		for _, c := range []string{"EQ", "NE", "LT", "GE", "LE", "GT", "CS", "CC", "HI", "LS", "MI", "PL"} {
			if strings.HasPrefix(fl.name, "SH") && (c == "LT" || c == "GE" || c == "LE" || c == "GT") && fl.name != "SHLQ1" && fl.name != "SHRQ1" {
				continue // OF is undefined after multi-bit shifts
			}
			if fl.name == "SHLQCL" || (fl.name == "DECQ" && (c == "CS" || c == "CC" || c == "HI" || c == "LS")) {
				continue // DECQ leaves CF as it was: undefined at entry here
			}
			add("FLAGS_"+fl.name+"_"+c, 8, "avx2", "MOVQ (AX), R8\n\tMOVQ (BX), R9\n\tMOVQ $0, R10\n\tMOVQ $1, R11\n\t"+fl.code+
				"\n\tCMOVQ"+c+" R11, R10\n\tVMOVQ R10, X2\n\tVPINSRQ $1, R9, X2, X2")
		}
		if fl.name == "SHLQCL" {
			add("FLAGS_SHLQCL", 8, "avx2", "MOVQ (AX), R8\n\tMOVQ (BX), R9\n\t"+fl.code+"\n\tVMOVQ R9, X2")
		}
	}
	add("IMUL3Q", 8, "avx2", "MOVQ (AX), R8\n\tIMUL3Q $0x40, R8, R9\n\tVMOVQ R9, X2")
	add("IMULQ", 8, "avx2", "MOVQ (AX), R8\n\tMOVQ (BX), R9\n\tIMULQ R8, R9\n\tVMOVQ R9, X2")
	add("LEAQ", 8, "avx2", "MOVQ (AX), R8\n\tMOVQ (BX), R9\n\tLEAQ -24(R8)(R9*8), R10\n\tVMOVQ R10, X2")
	add("MOVL", 8, "avx2", "MOVQ (AX), R8\n\tMOVL R8, R9\n\tVMOVQ R9, X2")
	add("DIVQ", 8, "avx2", "MOVQ (AX), AX\n\tMOVQ $0, DX\n\tMOVQ (BX), R9\n\tORQ $1, R9\n\tDIVQ R9\n\tVMOVQ AX, X2\n\tVPINSRQ $1, DX, X2, X2")

	// More AVX-512 and AVX forms the generators may emit next.
	add("VMOVDQU32_kz", 4, "avx512", "VMOVDQU32.Z (AX), K1, Z2")
	addStore("VMOVDQU64_stk", 8, "avx512", "VMOVDQU64 Z0, K1, (CX)")
	add("VSHUFF64X2", 8, "avx512", "VSHUFF64X2 $0x4e, Z0, Z1, Z2")
	add("VSHUFF32X4_Y", 4, "avx512", "VSHUFF32X4 $1, Y0, Y1, Y2")
	add("VEXTRACTF64X2", 8, "avx512", "VEXTRACTF64X2 $2, Z0, K1, X2")
	addStore("VEXTRACTF32X8_m", 4, "avx512", "VEXTRACTF32X8 $1, Z0, (CX)")
	add("VINSERTF32X4", 4, "avx512", "VINSERTF32X4 $2, X0, Z1, Z2")
	add("VINSERTF64X2_m", 8, "avx512", "VINSERTF64X2 $3, (AX), Z1, K1, Z2")
	add("VPERMILPD", 8, "avx512", "VPERMILPD $0x5a, Z0, Z2")
	add("VPERMILPD_Y", 8, "avx2", "VPERMILPD $0x6, Y0, Y2")
	add("VSHUFPD", 8, "avx2", "VSHUFPD $0x9, Y0, Y1, Y2")
	add("VSHUFPD_Z", 8, "avx512", "VSHUFPD $0xa5, Z0, Z1, K1, Z2")
	add("VPSLLQ", 8, "avx512", "VPSLLQ $9, Z0, Z2")
	add("VPSRAQ", 8, "avx512", "VPSRAQ $70, Z0, Z2")
	add("VPMULLD", 4, "avx2", "VPMULLD Y0, Y1, Y2")
	add("VPMAXSD", 4, "avx2", "VPMAXSD Y0, Y1, Y2")
	add("VPMINSD", 4, "avx512", "VPMINSD Z0, Z1, K1, Z2")
	add("VPADDQ", 8, "avx512", "VPADDQ.BCST (AX), Z1, Z2")
	add("VPANDN", 8, "avx2", "VPANDN Y0, Y1, Y2")
	add("VANDNPD", 8, "avx512", "VANDNPD Z0, Z1, Z2")
	add("VORPD_k", 8, "avx512", "VORPD Z0, Z1, K1, Z2")
	add("VPBROADCASTQ_g", 8, "avx512", "MOVQ (AX), R8\n\tVPBROADCASTQ R8, K1, Z2")
	add("VCMPPDK", 8, "avx512", "VCMPPD $0x0e, Z0, Z1, K1, K2\n\tVMOVUPD.Z Z0, K2, Z2")
	add("VPCMPUD", 4, "avx512", "VPCMPUD $6, Z0, Z1, K2\n\tVMOVUPS.Z Z0, K2, Z2")
	add("KLOGIC", 4, "avx512", "KMOVW DX, K3\n\tKSHIFTRQ $16, K1, K4\n\tKANDW K3, K4, K5\n\tKORW K5, K3, K6\n\tKXORW K6, K4, K7\n\tKNOTW K7, K2\n\tKSHIFTLW $3, K2, K2\n\tVMOVUPS.Z Z0, K2, Z2")
	add("KTEST", 4, "avx512", "KMOVW K1, K3\n\tKSHIFTRQ $20, K1, K4\n\tKTESTW K3, K4\n\tMOVQ $0, R8\n\tMOVQ $1, R9\n\tCMOVQCS R9, R8\n\tVMOVQ R8, X2")
	add("KORTESTQ", 4, "avx512", "KORTESTQ K1, K1\n\tMOVQ $0, R8\n\tMOVQ $1, R9\n\tCMOVQEQ R9, R8\n\tVMOVQ R8, X2")
	addStore("VMOVHPD_st", 8, "avx2", "VMOVHPD X0, (CX)")
	add("VMOVLPD", 8, "avx2", "VMOVLPD (AX), X1, X2")
	add("VMOVQ_xx", 8, "avx2", "VMOVQ X0, X2")
	add("MOVQ_gx", 8, "avx2", "MOVQ (AX), R8\n\tMOVQ R8, X2")
	add("MOVQ_xg", 8, "avx2", "MOVQ X0, R8\n\tVMOVQ R8, X2")
	add("VPINSRD", 4, "avx2", "MOVQ (AX), R8\n\tVPINSRD $2, R8, X1, X2")
	add("VPMOVSXBQ", 8, "avx512", "VPMOVSXBQ X0, Z2")
	add("VPMOVZXWQ_k", 8, "avx512", "VPMOVZXWQ (AX), K1, Z2")
	add("VCVTPH2PS_Zkz", 2, "avx512", "VCVTPH2PS.Z (AX), K1, Z2")
	addStore("VCVTPS2PH_Zk", 4, "avx512", "VCVTPS2PH $3, Z0, K1, (CX)")
	add("VRNDSCALEPS_Y", 4, "avx512", "VRNDSCALEPS $2, Y0, K1, Y2")
	add("VGETEXPPS_Y", 4, "avx512", "VGETEXPPS Y0, Y2")
	add("VBROADCASTSD_k", 8, "avx512", "VBROADCASTSD X0, K1, Z2")
	add("VMINPD_bk", 8, "avx512", "VMINPD.BCST (AX), Z1, K1, Z2")
	add("VFMADD231PS_bz", 4, "avx512", "VFMADD231PS.BCST.Z (AX), Z1, K1, Z2")
	add("VSQRTPS", 4, "avx2", "VSQRTPS Y0, Y2")
	add("VSQRTPS_Zk", 4, "avx512", "VSQRTPS (AX), K1, Z2")
	add("VSQRTPD", 8, "avx2", "VSQRTPD Y0, Y2")
	add("VMOVAPS_rr", 4, "avx2", "VMOVAPS Y0, Y2")
	add("VPSRLQ", 8, "avx2", "VPSRLQ $17, Y0, Y2")
	add("VPSUBQ", 8, "avx512", "VPSUBQ Z0, Z1, K1, Z2")
	add("VXORPD", 8, "avx2", "VXORPD Y0, Y1, Y2")
	add("VANDPD", 8, "avx512", "VANDPD.Z Z0, Z1, K1, Z2")
	add("VPORQ", 8, "avx512", "VPORQ Z0, Z1, K1, Z2")
	add("VPANDND", 4, "avx512", "VPANDND Z0, Z1, K1, Z2")
	add("VPAND", 4, "avx2", "VPAND Y0, Y1, Y2")
	add("VPOR", 4, "avx2", "VPOR Y0, Y1, Y2")
	add("VPXOR", 4, "avx2", "VPXOR Y0, Y1, Y2")
	add("VPCMPEQQ", 8, "avx2", "VPCMPEQQ Y0, Y1, Y2")
	add("VPERM2I128", 4, "avx2", "VPERM2I128 $0x12, Y0, Y1, Y2")
	add("VEXTRACTI128", 4, "avx2", "VEXTRACTI128 $1, Y0, X2")
	add("VINSERTI128", 4, "avx2", "VINSERTI128 $1, X0, Y1, Y2")
	add("VMOVHPS", 4, "avx2", "VMOVHPS (AX), X1, X2")
	add("VMOVLPS", 4, "avx2", "VMOVLPS (AX), X1, X2")
	add("VMOVAPD_rr", 8, "avx2", "VMOVAPD Y0, Y2")
	for _, f := range []string{"VFMSUB213PS", "VFNMADD132PD", "VFNMSUB213PS", "VFMSUB132PD", "VFNMADD213PD", "VFNMSUB132PS"} {
		add(f, 4, "avx2", f+" Y0, Y1, Y2")
	}
	for _, f := range []string{"VFMSUB231SS", "VFNMADD213SD", "VFNMSUB132SS", "VFMADD213SS", "VFMADD132SD"} {
		add(f, 4, "avx2", f+" X0, X1, X2")
	}
	add("VADDSD", 8, "avx2", "VADDSD X0, X1, X2")
	add("VDIVSS_m", 4, "avx2", "VDIVSS (AX), X1, X2")
	add("VMINSD", 8, "avx2", "VMINSD X0, X1, X2")
	for _, fl := range []struct{ name, code string }{
		{"SARQ", "SARQ $3, R9"}, {"SARQ1", "SARQ $1, R9"}, {"NEGQ", "NEGQ R9"}, {"INCQ", "INCQ R9"}, {"NOTQ", "NOTQ R9"},
		{"SHRL", "SHRL $5, R9"}, {"ADDL", "ADDL R8, R9"}, {"SUBL", "SUBL $7, R9"}, {"CMPL", "CMPL R9, R8"}, {"ORQ", "ORQ R8, R9"},
	} {
		for _, c := range []string{"EQ", "NE", "LT", "GE", "LE", "GT", "MI", "PL"} {
			if (fl.name == "SARQ" || fl.name == "SHRL") && (c == "LT" || c == "GE" || c == "LE" || c == "GT") {
				continue
			}
			if fl.name == "NOTQ" {
				continue // NOT sets no flags
			}
			add("FLAGS_"+fl.name+"_"+c, 8, "avx2", "MOVQ (AX), R8\n\tMOVQ (BX), R9\n\tMOVQ $0, R10\n\tMOVQ $1, R11\n\tCMPQ R8, R9\n\t"+fl.code+
				"\n\tCMOVQ"+c+" R11, R10\n\tVMOVQ R10, X2\n\tVPINSRQ $1, R9, X2, X2")
		}
		if fl.name != "INCQ" && fl.name != "NOTQ" {
			for _, c := range []string{"CS", "HI"} {
				if fl.name == "SARQ" || fl.name == "SHRL" || fl.name == "SARQ1" || strings.HasPrefix(fl.name, "OR") || fl.name == "NEGQ" || fl.name == "ADDL" || fl.name == "SUBL" || fl.name == "CMPL" {
					add("FLAGS_"+fl.name+"_"+c, 8, "avx2", "MOVQ (AX), R8\n\tMOVQ (BX), R9\n\tMOVQ $0, R10\n\tMOVQ $1, R11\n\t"+fl.code+
						"\n\tCMOVQ"+c+" R11, R10\n\tVMOVQ R10, X2\n\tVPINSRQ $1, R9, X2, X2")
				}
			}
		}
		if fl.name == "NOTQ" {
			add("NOTQ", 8, "avx2", "MOVQ (BX), R9\n\tNOTQ R9\n\tVMOVQ R9, X2")
		}
	}
	add("KANDNW", 4, "avx512", "KMOVW DX, K3\n\tKANDNW K1, K3, K2\n\tKXNORW K2, K1, K4\n\tKADDW K4, K3, K2\n\tVMOVUPS.Z Z0, K2, Z2")
	add("VSUBSS", 4, "avx2", "VSUBSS X0, X1, X2")
	add("VMULSD_m", 8, "avx2", "VMULSD (AX), X1, X2")
	add("VMAXSS", 4, "avx2", "VMAXSS X0, X1, X2")

	// Every AVX2 probe also runs in a Z-register frame (suffix _U, needs AVX-512) so that
	// the bits above 255 are compared too; the plain one needs only AVX2, FMA and F16C.
	var all []probe
	for _, p := range ps {
		if p.isa == "avx2" {
			all = append(all, probe{name: p.name, elem: p.elem, isa: "avx2", store: p.store, code: p.code, ymm: true})
			p.name += "_U"
			p.isa = "avx512"
		}
		all = append(all, p)
	}
	ps = all

	var s, g bytes.Buffer
	fmt.Fprintf(&s, "// Code generated by gen.go. DO NOT EDIT.\n\n#include \"textflag.h\"\n")
	fmt.Fprintf(&g, "// Code generated by gen.go. DO NOT EDIT.\n\npackage probe\n\n")
	for _, p := range ps {
		name := strings.NewReplacer(".", "_").Replace(p.name)
		fmt.Fprintf(&s, "\n// func %s(a, b, c *[64]byte, k uint64)\nTEXT ·%s(SB), NOSPLIT, $0-32\n", name, name)
		r := "Z"
		s.WriteString("\tMOVQ a+0(FP), AX\n\tMOVQ b+8(FP), BX\n\tMOVQ c+16(FP), CX\n\tMOVQ k+24(FP), DX\n")
		if p.ymm {
			r = "Y"
		} else {
			s.WriteString("\tKMOVQ DX, K1\n")
		}
		s.WriteString("\tVMOVUPS (AX), " + r + "0\n\tVMOVUPS (BX), " + r + "1\n\tVMOVUPS (CX), " + r + "2\n")
		s.WriteString("\t" + p.code + "\n")
		if !p.store {
			s.WriteString("\tVMOVUPS " + r + "2, (CX)\n")
		}
		s.WriteString("\tVZEROUPPER\n\tRET\n")
		fmt.Fprintf(&g, "//go:noescape\nfunc %s(a, b, c *[64]byte, k uint64)\n\n", name)
	}
	g.WriteString("// Probes lists the probe routines: name, lane size of the operands, ISA, function.\nvar Probes = []Probe{\n")
	for _, p := range ps {
		name := strings.NewReplacer(".", "_").Replace(p.name)
		fmt.Fprintf(&g, "\t{%q, %d, %q, %s},\n", name, p.elem, p.isa, name)
	}
	g.WriteString("}\n")
	must(os.WriteFile("probe_amd64.s", s.Bytes(), 0o644))
	must(os.WriteFile("probe_amd64.go", g.Bytes(), 0o644))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

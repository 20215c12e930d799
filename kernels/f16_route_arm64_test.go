//go:build arm64 && !purego

package kernels

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

func sameFunc(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return !va.IsNil() && !vb.IsNil() && va.Pointer() == vb.Pointer()
}

// fp16Route reports whether the current variant runs hadd and haxpy on f16 lanes (the FP16 routines
// vloop_*_0FP16 installed by the "neon" variant when FEAT_FP16 is present).
func fp16Route() bool {
	return sameFunc(vloop_haxpy_0, vloop_haxpy_0FP16Slot)
}

// TestFP16Dispatch checks which routines the variants install: "neon" the FP16 ones exactly when
// x/sys/cpu reports FEAT_FP16 (ASIMDHP and FPHP) and the FCVTL/FCVTN ones otherwise, "go" none. With
// KGEN_EXPECT_FP16=1 (or 0) it also requires that the CPU has (or lacks) FEAT_FP16, so that a run under
// qemu-aarch64's default CPU and one under -cpu cortex-a57 each prove their route is taken.
func TestFP16Dispatch(t *testing.T) {
	has := cpu.ARM64.HasASIMDHP && cpu.ARM64.HasFPHP
	t.Logf("cpu.ARM64.HasASIMDHP=%v HasFPHP=%v", cpu.ARM64.HasASIMDHP, cpu.ARM64.HasFPHP)
	switch os.Getenv("KGEN_EXPECT_FP16") {
	case "1":
		if !has {
			t.Fatal("KGEN_EXPECT_FP16=1 but the CPU lacks FEAT_FP16")
		}
	case "0":
		if has {
			t.Fatal("KGEN_EXPECT_FP16=0 but the CPU has FEAT_FP16")
		}
	}
	defer Use("")
	if err := Use("neon"); err != nil {
		t.Fatal(err)
	}
	type pair struct {
		slot, fp16, neon any
	}
	for name, p := range map[string]pair{
		"hadd":  {vloop_hadd_0, vloop_hadd_0FP16Slot, vloop_hadd_0NEONSlot},
		"haxpy": {vloop_haxpy_0, vloop_haxpy_0FP16Slot, vloop_haxpy_0NEONSlot},
	} {
		if got := sameFunc(p.slot, p.fp16); got != has {
			t.Errorf("neon: %s runs the FP16 routine: %v, want %v", name, got, has)
		}
		if got := sameFunc(p.slot, p.neon); got == has {
			t.Errorf("neon: %s runs the FCVTL/FCVTN routine: %v, want %v", name, got, !has)
		}
	}
	if fp16Route() != has {
		t.Errorf("fp16Route() = %v under neon, want %v", fp16Route(), has)
	}
	// Loops that are not all-f16 have no FP16 routine.
	if !sameFunc(vloop_cvt_f16_f32_0, vloop_cvt_f16_f32_0NEONSlot) {
		t.Error("neon: cvt_f16_f32 does not run its NEON routine")
	}
	if err := Use("go"); err != nil {
		t.Fatal(err)
	}
	if vloop_hadd_0 != nil || vloop_haxpy_0 != nil || fp16Route() {
		t.Error("go: a vector-loop routine is installed")
	}
	if err := Use("neon"); err != nil {
		t.Fatal(err)
	}
	if fp16Route() != has {
		t.Error("reinstalling neon changed the route")
	}
}

// TestFP16Asm is an asmcheck of kgen_arm64.s: the FP16 routines of hadd and haxpy compute on .8H
// vectors (16-byte loads and stores, FADD / FMLA .8H WORDs) with no FCVTL/FCVTN, their odd group on
// .4H; the fallbacks widen and narrow with FCVTL/FCVTN on .4S.
func TestFP16Asm(t *testing.T) {
	for name, op := range map[string]string{"vloop_hadd_0": "fadd", "vloop_haxpy_0": "fmla"} {
		body := asmFunc(t, name+"FP16")
		loop := body[strings.Index(body, "_loop:"):strings.Index(body, "_tail:")]
		for _, re := range []string{
			`VLD1\.P\s+16\(R\d+\), \[V\d+\.H8\]`,
			`VST1\.P\s+\[V\d+\.H8\], 16\(R\d+\)`,
			`WORD\s+\$0x4e[0-9a-f]{6} // ` + op + ` v\d+\.8h, v\d+\.8h, v\d+\.8h`,
		} {
			if !regexp.MustCompile(re).MatchString(loop) {
				t.Errorf("%sFP16 loop: no match for %q in\n%s", name, re, loop)
			}
		}
		if regexp.MustCompile(`fcvt|\.4s|\.S4`).MatchString(body) {
			t.Errorf("%sFP16 converts or computes in f32:\n%s", name, body)
		}
		if !regexp.MustCompile(`// ` + op + ` v\d+\.4h`).MatchString(body[strings.Index(body, "_tail4:"):]) {
			t.Errorf("%sFP16: no .4H group after the loop:\n%s", name, body)
		}
		fb := asmFunc(t, name+"NEON")
		for _, re := range []string{`// fcvtl v\d+\.4s, v\d+\.4h`, `// fcvtn v\d+\.4h, v\d+\.4s`} {
			if !regexp.MustCompile(re).MatchString(fb) {
				t.Errorf("%sNEON: no match for %q in\n%s", name, re, fb)
			}
		}
		if strings.Contains(fb, "8h") {
			t.Errorf("%sNEON uses FP16 arithmetic:\n%s", name, fb)
		}
	}
}

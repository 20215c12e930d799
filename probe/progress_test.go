package probe

import (
	"bytes"
	"strings"
	"testing"
)

// TestProgress: plain lines off a terminal; on one, a bar redrawn in place that ends cleared, with
// notes on lines of their own; a nil Progress is silent.
func TestProgress(t *testing.T) {
	var plain, term bytes.Buffer
	for _, p := range []*Progress{NewProgress(&plain, false), NewProgress(&term, true), nil} {
		p.grow(4)
		p.step("peak avx2/f32/1c", "90.0 GFLOP/s")
		p.Note("no CUDA GPU")
		p.step("latency L1", "")
		p.finish()
	}
	if want := "kgen probe: peak avx2/f32/1c: 90.0 GFLOP/s\nkgen probe: no CUDA GPU\nkgen probe: latency L1\n"; plain.String() != want {
		t.Errorf("plain output %q, want %q", plain.String(), want)
	}
	want := "\r\033[K[#######.......................] 1/4 peak avx2/f32/1c: 90.0 GFLOP/s" +
		"\r\033[Kkgen probe: no CUDA GPU\n" +
		"\r\033[K[###############...............] 2/4 latency L1" + "\r\033[K"
	if term.String() != want {
		t.Errorf("terminal output %q,\nwant %q", term.String(), want)
	}
	if strings.Contains(plain.String(), "\r") {
		t.Error("plain output redraws")
	}
}

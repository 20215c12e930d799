package golang

import (
	"go/format"
	"strings"
	"testing"
)

func TestDropBlankUses(t *testing.T) {
	src := `package p

var g = 1
var _ = g

func f(M, N int, X []float32) {
	_ = M
	acc := float32(0)
	_ = acc
	unused := float32(1)
	_ = unused
	X2, M2, un2 := X, M, N
	_, _, _ = X2, M2, un2
	acc = acc + X2[M2]
	{
		acc := float32(2) // shadows: its own blank use stays, the outer one is still removed
		_ = acc
	}
	for p0_, e_ := 0, N; p0_ < e_; p0_ = e_ {
	}
}
`
	want := `package p

var g = 1
var _ = g

func f(M, N int, X []float32) {
	acc := float32(0)
	unused := float32(1)
	_ = unused
	X2, M2, un2 := X, M, N
	_ = un2
	acc = acc + X2[M2]
	{
		acc := float32(2) // shadows: its own blank use stays, the outer one is still removed
		_ = acc
	}
	for p0_, e_ := 0, N; p0_ < e_; p0_ = e_ {
	}
}
`
	in, err := format.Source([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got, err := dropBlankUses(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("dropBlankUses:\n%s\nwant\n%s", got, want)
	}
}

func TestIsConversion(t *testing.T) {
	for expr, want := range map[string]bool{
		"float32(0)":                 true,
		"float32(math.Inf(-1))":      true,
		"float32(a) + float32(b)":    false,
		"float32(a) * (b)":           false,
		"float64(x)":                 false,
		"(float32(a))":               false,
		"float32(f(a), g(b)[(i)+1])": true,
	} {
		if got := isConversion(expr, "float32"); got != want {
			t.Errorf("isConversion(%q, float32) = %v, want %v", expr, got, want)
		}
	}
}

func TestImportBlock(t *testing.T) {
	got := importBlock(map[string]bool{"math": true, "github.com/kgen-dev/kgen/rt": true, "unsafe": true, "github.com/kgen-dev/kgen/f16": true})
	want := "import (\n\t\"math\"\n\t\"unsafe\"\n\n\t\"github.com/kgen-dev/kgen/f16\"\n\t\"github.com/kgen-dev/kgen/rt\"\n)\n\n"
	if got != want {
		t.Errorf("importBlock = %q, want %q", got, want)
	}
	if got := importBlock(map[string]bool{"github.com/kgen-dev/kgen/rt": true}); strings.Contains(got, "\n\n\t") {
		t.Errorf("importBlock with no standard imports has a blank line: %q", got)
	}
}

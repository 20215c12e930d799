package frontend

import (
	"strings"
	"testing"
)

func TestPackage(t *testing.T) {
	p, err := Package("kk", "t.kdsl", "kernel saxpy(a: f32, x: f32[N], y: inout f32[N]) {\n    y[i] = a * x[i] + y[i]\n}\n", "go")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "kk" || p.Source != "t.kdsl" || len(p.Kernels) != 1 || p.Kernels[0].K.Name != "saxpy" || p.Kernels[0].F == nil {
		t.Errorf("Package = %+v", p)
	}
	if _, err := Package("kk", "t.kdsl", "kernel bad(", "go"); err == nil {
		t.Error("a syntax error was accepted")
	}
	if _, err := Package("kk", "t.kdsl", "", "vax"); err == nil || !strings.Contains(err.Error(), "vax") {
		t.Errorf("an unknown target gave %v", err)
	}
}

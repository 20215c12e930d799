package ir

import (
	"strings"
	"testing"
)

// A run-time symbol must be one the backends can read; a plan symbol of the same name is fine.
func TestVerifyRunTimeSym(t *testing.T) {
	for _, c := range []struct {
		sym  ISym
		want string
	}{
		{ISym{Name: "s.Workers", RunTime: true}, ""},
		{ISym{Name: "s.Cores"}, ""},
		{ISym{Name: "s.Cores", RunTime: true}, "run-time symbol s.Cores is not one backends can read"},
	} {
		f := tiledGemm(gemmKernel(), 4, -1)
		f.Plan[c.sym.Name] = 2
		l := f.Body[0].(*Launch)
		l.Grid[0] = IMax(l.Grid[0], IMin(IConst{1}, c.sym))
		err := VerifyFunc(f)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v (run time %v): err = %v, want %q", c.sym, c.sym.RunTime, err, c.want)
		}
	}
}

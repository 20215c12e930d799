package golang

import (
	"strings"
	"testing"
)

// The Go backend binds each Micro to the slot routine its operand layouts select (ir.Micro.Kind): the
// rows kernel, the unpacked microkernel and the packed one for sgemm's three versions, only the packed
// one for hgemm, whose f16 operands are converted by Pack.
func TestMicroBindsByLayout(t *testing.T) {
	_, files := generateKernels(t)
	want := map[string]map[string]bool{
		"sgemm.go": {"sgemmSlot.Rows(": true, "sgemmSlot.MicroU(": true, "sgemmSlot.Micro(": true},
		"hgemm.go": {"hgemmSlot.Rows(": false, "hgemmSlot.MicroU(": false, "hgemmSlot.Micro(": true},
	}
	for _, f := range files {
		for call, present := range want[f.Name] {
			if got := strings.Contains(string(f.Data), call); got != present {
				t.Errorf("%s: calls %s = %v, want %v", f.Name, call, got, present)
			}
		}
		delete(want, f.Name)
	}
	if len(want) > 0 {
		t.Errorf("no files %v", want)
	}
}

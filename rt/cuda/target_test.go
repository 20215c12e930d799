package cuda

import (
	"strings"
	"testing"
)

func TestCheckTarget(t *testing.T) {
	h200 := Props{Name: "NVIDIA H200", Major: 9, Minor: 0}
	a100 := Props{Name: "NVIDIA A100", Major: 8, Minor: 0}
	rtx4090 := Props{Name: "RTX 4090", Major: 8, Minor: 9}
	b200 := Props{Name: "B200", Major: 10, Minor: 0}
	for _, c := range []struct {
		p      Props
		target string
		want   string // "" for success, else a substring of the error
	}{
		{h200, "sm_80", ""},
		{h200, "sm_90", ""},
		{h200, "sm_90a", ""},
		{a100, "sm_80", ""},
		{a100, "sm_86", "needs 8.6 or later"},
		{a100, "sm_90a", "NVIDIA A100 (compute capability 8.0) cannot run sm_90a code, which needs exactly 9.0"},
		{rtx4090, "sm_86", ""},
		{rtx4090, "sm_90", "needs 9.0 or later"},
		{b200, "sm_90", ""},
		{b200, "sm_90a", "needs exactly 9.0"},
		{b200, "sm_100a", ""},
		{h200, "sm_100a", "needs exactly 10.0"},
		{h200, "compute_90", "unknown target"},
		{h200, "sm_9", "unknown target"},
		{h200, "sm_", "unknown target"},
		{h200, "sm_90b", "unknown target"},
		{h200, "", "unknown target"},
	} {
		err := CheckTarget(c.p, c.target)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckTarget(%s %d.%d, %q) = %v, want %q", c.p.Name, c.p.Major, c.p.Minor, c.target, err, c.want)
		}
	}
}

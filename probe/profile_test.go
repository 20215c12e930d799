package probe

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRoundTripAndClass(t *testing.T) {
	p := &Profile{Version: Version, GOOS: "linux", GOARCH: "amd64", ISA: "avx512", Cores: 2,
		Caches: []Cache{{1, 48 << 10, 12, 64, "sysfs"}, {2, 2 << 20, 16, 64, "sysfs"}, {3, 260 << 20, 16, 64, "sysfs"}},
		Peak:   map[string]float64{"avx512/f32/1c": 140.5}}
	if got, want := p.Class(), "amd64-avx512-c2-l1_48K-l2_2M"; got != want {
		t.Errorf("Class = %q, want %q", got, want)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Errorf("round trip: %+v != %+v", q, p)
	}
	p.Version = 99
	b, _ = p.Marshal()
	os.WriteFile(path, b, 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("Load of version 99: err = %v", err)
	}
	os.WriteFile(path, []byte(`{"version":1,"bogus":2}`), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "not a kgen machine profile") {
		t.Errorf("Load of an unknown key: err = %v", err)
	}
}

func TestStatic(t *testing.T) {
	p := Static()
	if p.Cores < 1 || p.ISA == "" || p.GOARCH == "" {
		t.Fatalf("Static() = %+v", p)
	}
	t.Logf("class %s, features %v", p.Class(), p.Features)
}

// Generated kernel packages import probe for HostClass: probe must not link a GPU binding (rt/cuda and
// purego live in probe/gpuprobe), and HostClass must be the class of Static.
func TestNoGPUBinding(t *testing.T) {
	if got, want := HostClass(), Static().Class(); got != want {
		t.Errorf("HostClass() = %q, Static().Class() = %q", got, want)
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "purego") || strings.HasSuffix(dep, "/rt/cuda") || strings.HasSuffix(dep, "/rt/metal") {
			t.Errorf("package probe depends on %s", dep)
		}
	}
}

package metal

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The package (tests included) builds and vets without cgo on every platform a generated package
// targets: darwin/arm64 and darwin/amd64 with purego/objc, the others and -tags kgen_nometal with
// the stub.
func TestCrossVet(t *testing.T) {
	if os.Getenv("KGEN_CROSS_VET") != "1" {
		t.Skip("set KGEN_CROSS_VET=1 to vet for every platform (a cold cache compiles the standard library for each: minutes)")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skipf("no go command at %s", gobin)
	}
	for _, p := range []string{"darwin/arm64", "darwin/amd64", "linux/amd64", "linux/arm64", "windows/amd64", "darwin/arm64 kgen_nometal"} {
		platform, tags, _ := strings.Cut(p, " ")
		goos, goarch, _ := strings.Cut(platform, "/")
		cmd := exec.Command(gobin, "vet", "-tags="+tags, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("CGO_ENABLED=0 GOOS=%s GOARCH=%s go vet -tags=%q: %v\n%s", goos, goarch, tags, err, out)
		}
	}
}

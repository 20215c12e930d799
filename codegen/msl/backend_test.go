package msl

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestGeneratedPackageBuilds generates the package files for the library kernels, builds them with a
// main that evaluates every launch's Grid function on a shape, and checks that the embedded source is
// the .metal file and that each grid matches the launch's grid expression.
func TestGeneratedPackageBuilds(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		if goBin = filepath.Join(runtime.GOROOT(), "bin", "go"); !fileExists(goBin) {
			t.Skipf("no go command: %v", err)
		}
	}
	p := compilePackage(t, "kernels.kdsl", libraryText(t), "msl:3.1")
	p.Name = "main"
	files, err := Backend{}.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Name != "main.metal" || files[1].Name != "metal.go" {
		t.Fatalf("files %v", files)
	}
	dir := moduleTempDir(t) // metal.go imports kgen's rt, rt/metal and f16
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dims := map[string]int{"M": 37, "N": 53, "K": 91, "Bt": 3, "Nb": 5, "C": 7, "CO": 11, "CI": 2, "H": 9, "W": 8, "KH": 3, "KW": 3, "OH": 7, "OW": 6}
	dj, _ := json.Marshal(dims)
	mainGo := fmt.Sprintf(`package main

import (
	"encoding/json"
	"fmt"
)

func main() {
	var dims map[string]int
	if err := json.Unmarshal([]byte(%q), &dims); err != nil {
		panic(err)
	}
	grids := map[string][3]int{}
	for _, l := range metalLaunches {
		grids[l.Function] = l.Grid(dims)
	}
	out, _ := json.Marshal(map[string]any{"grids": grids, "source": len(metalSource), "unsupported": len(metalUnsupported)})
	fmt.Println(string(out))
}
`, dj)
	for name, data := range map[string]string{"main.go": mainGo} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goBin, "vet", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet of the generated package: %v\n%s", err, out)
	}
	cmd = exec.Command(goBin, "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	var res struct {
		Grids       map[string][3]int
		Source      int
		Unsupported int
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Source != len(files[0].Data) {
		t.Errorf("embedded source has %d bytes, the .metal file %d", res.Source, len(files[0].Data))
	}
	src, err := BuildSource(p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Unsupported != len(src.Unsupported) {
		t.Errorf("%d unsupported kernels listed, want %d", res.Unsupported, len(src.Unsupported))
	}
	if len(res.Grids) != len(src.Launches) {
		t.Errorf("%d launches in the table, want %d", len(res.Grids), len(src.Launches))
	}
	for _, l := range src.Launches {
		want := [3]int{1, 1, 1}
		for i, e := range l.Grid {
			v, err := evalGrid(e, dims)
			if err != nil {
				t.Fatal(err)
			}
			want[i] = v
		}
		if got := res.Grids[l.Function]; got != want {
			t.Errorf("%s: Grid = %v, want %v", l.Function, got, want)
		}
	}
}

// moduleTempDir makes a directory under testdata, inside kgen's module (so that a generated package
// resolves kgen's packages), removed when the test ends.
func moduleTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("testdata", "tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

package parse_test

import ("testing";"os";"path/filepath";"strconv";"strings";"time"
"github.com/kgen-dev/kgen/check";"github.com/kgen-dev/kgen/parse")

func TestZZTime(t *testing.T) {
	dir := os.Getenv("ZZDIR")
	if dir == "" { t.Skip() }
	fs, _ := filepath.Glob(dir + "/*")
	for _, f := range fs {
		b, _ := os.ReadFile(f)
		lines := strings.SplitN(string(b), "\n", 2)
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lines[1]), "string("), ")"))
		if err != nil { t.Log(f, err); continue }
		st := time.Now()
		file, err := parse.Parse("f.kd", s)
		if err == nil { check.Check(file, s) }
		if d := time.Since(st); d > 20*time.Millisecond { t.Logf("%v %q", d, s) }
	}
}

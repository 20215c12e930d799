package breakdown

import (
	"bufio"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
)

var (
	labelRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*):`)
	textRE  = regexp.MustCompile(`^TEXT\s`)
)

// ParseLabels reads Go assembly and returns, for each line (1-based; index
// 0 unused), the label it lies under: the last "name:" line at or before
// it within the same TEXT block ("" before the block's first label).
func ParseLabels(r io.Reader) ([]string, error) {
	out := []string{""}
	cur := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case textRE.MatchString(line):
			cur = ""
		default:
			if m := labelRE.FindStringSubmatch(line); m != nil {
				cur = m[1]
			}
		}
		out = append(out, cur)
	}
	return out, sc.Err()
}

// FileLabels is a LabelFunc over assembly files read from disk on first
// use and cached; files that are not ".s" or cannot be read give "".
type FileLabels struct {
	mu    sync.Mutex
	files map[string][]string
}

// Label implements LabelFunc.
func (fl *FileLabels) Label(file string, line int) string {
	if !strings.HasSuffix(file, ".s") {
		return ""
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.files == nil {
		fl.files = map[string][]string{}
	}
	ls, ok := fl.files[file]
	if !ok {
		if f, err := os.Open(file); err == nil {
			ls, _ = ParseLabels(f)
			f.Close()
		}
		fl.files[file] = ls
	}
	if line <= 0 || line >= len(ls) {
		return ""
	}
	return ls[line]
}

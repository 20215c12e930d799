// Package report compares benchmark results of a generated kernel package with the roofline of a
// machine profile (package probe): per kernel and shape the achieved GFLOP/s, the attainable
// min(peak, intensity × bandwidth of the level the working set fits in), and the bound; as a markdown
// table and an SVG picture. `kgen report` is its command.
package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Result is one benchmark's measurements: the median of each metric over the lines of that name (a run
// with -count N prints N lines).
type Result struct {
	Name  string // without "Benchmark" and the -GOMAXPROCS suffix: "Sgemm/avx512/512"
	Procs int    // GOMAXPROCS of the run (1 when the name has no suffix)
	// Metrics maps a unit ("ns/op", "GFLOP/s", "ns/avx2", ...) to its median value.
	Metrics map[string]float64
	Line    int // first line of the name in its file
}

// ParseFile reads `go test -bench` output (the standard Go benchmark format: configuration lines
// "key: value", result lines "BenchmarkName-P  iterations  value unit  value unit ...", anything
// else ignored). A line that starts like a result but does not parse is an error naming file:line:col.
func ParseFile(path string) ([]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

// Parse is ParseFile on r, with name in the errors.
func Parse(name string, r io.Reader) ([]Result, error) {
	type acc struct {
		res  Result
		vals map[string][]float64
	}
	var order []string
	byKey := map[string]*acc{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if !strings.HasPrefix(text, "Benchmark") {
			continue
		}
		fields := fieldsWithCols(text)
		if len(fields) == 1 {
			continue // the name alone: printed before a benchmark's log output
		}
		bad := func(col int, format string, args ...any) error {
			return fmt.Errorf("%s:%d:%d: malformed benchmark line: %s", name, line, col, fmt.Sprintf(format, args...))
		}
		if _, err := strconv.Atoi(fields[1].s); err != nil {
			return nil, bad(fields[1].col, "iteration count %q is not an integer (want \"Name  iterations  value unit ...\")", clip(fields[1].s))
		}
		if (len(fields)-2)%2 != 0 {
			last := fields[len(fields)-1]
			return nil, bad(last.col, "value %q has no unit", clip(last.s))
		}
		full := strings.TrimPrefix(fields[0].s, "Benchmark")
		procs := 1
		if i := strings.LastIndexByte(full, '-'); i > 0 {
			if p, err := strconv.Atoi(full[i+1:]); err == nil && p > 0 {
				full, procs = full[:i], p
			}
		}
		key := fmt.Sprintf("%s-%d", full, procs)
		a := byKey[key]
		if a == nil {
			a = &acc{res: Result{Name: full, Procs: procs, Line: line}, vals: map[string][]float64{}}
			byKey[key] = a
			order = append(order, key)
		}
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i].s, 64)
			if err != nil {
				return nil, bad(fields[i].col, "value %q of unit %q is not a number", clip(fields[i].s), clip(fields[i+1].s))
			}
			a.vals[fields[i+1].s] = append(a.vals[fields[i+1].s], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	var out []Result
	for _, k := range order {
		a := byKey[k]
		a.res.Metrics = map[string]float64{}
		for unit, vs := range a.vals {
			a.res.Metrics[unit] = median(vs)
		}
		out = append(out, a.res)
	}
	return out, nil
}

type field struct {
	s   string
	col int // 1-based byte column
}

func fieldsWithCols(s string) []field {
	var out []field
	start := -1
	for i, r := range s + " " {
		if unicode.IsSpace(r) {
			if start >= 0 {
				out = append(out, field{s[start:i], start + 1})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

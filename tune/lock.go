// Package tune searches the run-time plan symbols of a kdsl file's GEMM slots on the machine at hand
// (kgen tune) and keeps the result in a lockfile, kgen.lock, that kgen gen reads offline and kgen verify
// checks for staleness.
//
// A lock entry holds, for one kernel (by the hash of its canonical text), one target variant and one
// machine class (probe.Profile.Class), the plan values measured faster than the analytical defaults, and
// the speed-up with its noise. The generated package carries the entries of every class and installs, at
// init, those of the class of the machine it runs on (codegen.DispatchFile); generation itself never
// depends on the machine, so the committed files are the same everywhere.
package tune

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/parse"
)

// Entry is one line of kgen.lock.
type Entry struct {
	Kernel  string
	Hash    string // KernelHashes: the first 16 hex digits of the SHA-256 of the kernel's canonical text
	Target  string // amd64, arm64
	Variant string // the variant whose plan the values replace (avx512, avx2, neon)
	Class   string // probe.Profile.Class of the machine they were measured on
	// Values are plan symbols (<slot>.KC, ...) and their tuned values.
	Values map[string]int
	// Speedup is the geometric mean over Shapes of the default's time over the tuned one's (1 when no
	// candidate beat the default); Noise is the median relative spread of the paired ratios.
	Speedup, Noise float64
	// Shapes are the tuning shapes, M×N×K of the GEMM.
	Shapes []string
	// Line is the entry's line in the file it was read from (0 for a new entry).
	Line int
}

// Key identifies an entry: one per kernel, target variant and machine class.
func (e Entry) Key() string {
	return e.Kernel + " " + e.Target + "/" + e.Variant + " " + e.Class
}

// Lock is a parsed kgen.lock.
type Lock struct {
	Path    string
	Entries []Entry
}

const header = `# kgen.lock: plan values measured by kgen tune; kgen gen applies them per machine class at run time,
# kgen verify says when an entry is stale. One entry a line:
# kernel hash target/variant class symbol=value... speedup=S noise=N shapes=MxNxK,...
`

// Format prints the lock: the header, then the entries sorted by kernel, target, variant and class,
// symbols sorted within an entry.
func (l *Lock) Format() []byte {
	var b bytes.Buffer
	b.WriteString(header)
	es := slices.Clone(l.Entries)
	slices.SortFunc(es, func(x, y Entry) int {
		return cmp.Or(cmp.Compare(x.Kernel, y.Kernel), cmp.Compare(x.Target, y.Target),
			cmp.Compare(x.Variant, y.Variant), cmp.Compare(x.Class, y.Class))
	})
	for _, e := range es {
		fmt.Fprintf(&b, "%s %s %s/%s %s", e.Kernel, e.Hash, e.Target, e.Variant, e.Class)
		for _, k := range slices.Sorted(maps.Keys(e.Values)) {
			fmt.Fprintf(&b, " %s=%d", k, e.Values[k])
		}
		fmt.Fprintf(&b, " speedup=%s noise=%s shapes=%s\n", ffmt(e.Speedup), ffmt(e.Noise), strings.Join(e.Shapes, ","))
	}
	return b.Bytes()
}

func ffmt(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// Set adds e, replacing the entry with the same key.
func (l *Lock) Set(e Entry) {
	for i := range l.Entries {
		if l.Entries[i].Key() == e.Key() {
			l.Entries[i] = e
			return
		}
	}
	l.Entries = append(l.Entries, e)
}

// Load reads a lockfile.
func Load(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse reads lock text; errors name the file, line and column and say what was expected.
func Parse(path string, src []byte) (*Lock, error) {
	l := &Lock{Path: path}
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		e, col, err := parseEntry(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d:%d: %v", path, n, col, err)
		}
		e.Line = n
		if prev, dup := seen[e.Key()]; dup {
			return nil, fmt.Errorf("%s:%d:1: second entry for %s (first on line %d)", path, n, e.Key(), prev)
		}
		seen[e.Key()] = n
		l.Entries = append(l.Entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return l, nil
}

// parseEntry reads one entry line; on error it also returns the 1-based column of the bad field.
func parseEntry(line string) (Entry, int, error) {
	type field struct {
		s   string
		col int
	}
	var fs []field
	for i := 0; i < len(line); {
		if line[i] == ' ' || line[i] == '\t' {
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		fs = append(fs, field{line[i:j], i + 1})
		i = j
	}
	var e Entry
	if len(fs) < 4 {
		col := len(line) + 1
		return e, col, fmt.Errorf("%d fields; want kernel hash target/variant class symbol=value... speedup=S noise=N shapes=...", len(fs))
	}
	e.Kernel, e.Hash, e.Class = fs[0].s, fs[1].s, fs[3].s
	if !isName(e.Kernel) {
		return e, fs[0].col, fmt.Errorf("kernel name %q; want an identifier", parse.Printable(e.Kernel))
	}
	if len(e.Hash) != 16 || strings.Trim(e.Hash, "0123456789abcdef") != "" {
		return e, fs[1].col, fmt.Errorf("hash %q; want 16 lower-case hex digits", parse.Printable(e.Hash))
	}
	tv := strings.Split(fs[2].s, "/")
	if len(tv) != 2 || !isName(tv[0]) || !isName(tv[1]) {
		return e, fs[2].col, fmt.Errorf("%q; want target/variant (amd64/avx512)", parse.Printable(fs[2].s))
	}
	e.Target, e.Variant = tv[0], tv[1]
	if strings.ContainsAny(e.Class, "=/") {
		return e, fs[3].col, fmt.Errorf("machine class %q; want a class as kgen probe prints it", parse.Printable(e.Class))
	}
	e.Values = map[string]int{}
	have := map[string]bool{}
	for _, f := range fs[4:] {
		k, v, ok := strings.Cut(f.s, "=")
		if !ok {
			return e, f.col, fmt.Errorf("%q; want symbol=value", parse.Printable(f.s))
		}
		if have[k] {
			return e, f.col, fmt.Errorf("%s given twice", parse.Printable(k))
		}
		have[k] = true
		switch k {
		case "speedup", "noise":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 0 || x != x || x > 1e6 {
				return e, f.col, fmt.Errorf("%s=%q; want a non-negative number", k, parse.Printable(v))
			}
			if k == "speedup" {
				e.Speedup = x
			} else {
				e.Noise = x
			}
		case "shapes":
			for _, s := range strings.Split(v, ",") {
				if _, err := ParseShape(s); err != nil {
					return e, f.col, err
				}
				e.Shapes = append(e.Shapes, s)
			}
		default:
			slot, sym, ok := strings.Cut(k, ".")
			if !ok || !isName(slot) || !isName(sym) {
				return e, f.col, fmt.Errorf("%q; want a plan symbol slot.NAME (sgemm.KC), speedup, noise or shapes", parse.Printable(k))
			}
			n, err := strconv.Atoi(v)
			if err != nil || !ir.TunedValueOK(sym, n) {
				return e, f.col, fmt.Errorf("%s=%q; want a positive integer (-1 for a prefetch distance: off)", k, parse.Printable(v))
			}
			if IsGPUTarget(e.Target) {
				if err := gpuValue(e.Target+"/"+e.Variant, k, n); err != nil {
					return e, f.col, err
				}
			}
			e.Values[k] = n
		}
	}
	for _, k := range []string{"speedup", "noise", "shapes"} {
		if !have[k] {
			return e, len(line) + 1, fmt.Errorf("no %s=; want one", k)
		}
	}
	if len(e.Values) == 0 {
		return e, fs[3].col + len(e.Class), fmt.Errorf("no plan symbol; want at least one symbol=value")
	}
	if IsGPUTarget(e.Target) {
		if _, err := GPUPlan(e.Target, e.Variant, e.Values); err != nil {
			return e, fs[4].col, err
		}
	}
	return e, 0, nil
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Shape is one tuning shape of a GEMM: M rows, N columns, K the reduction.
type Shape struct{ M, N, K int }

func (s Shape) String() string { return fmt.Sprintf("%dx%dx%d", s.M, s.N, s.K) }

// ParseShape reads MxNxK.
func ParseShape(s string) (Shape, error) {
	p := strings.Split(s, "x")
	var v [3]int
	if len(p) == 3 {
		for i := range p {
			n, err := strconv.Atoi(p[i])
			if err != nil || n < 1 || n > 1<<16 {
				break
			}
			v[i] = n
		}
	}
	if v[2] == 0 {
		return Shape{}, fmt.Errorf("shape %q; want MxNxK with each between 1 and 65536 (64x64x64)", parse.Printable(s))
	}
	return Shape{v[0], v[1], v[2]}, nil
}

// KernelHashes returns the hash of every kernel of a kdsl file: the first 16 hex digits of the SHA-256 of
// its canonical text (kgen fmt's printing of the kernel and of its schedule), so that a change of the
// kernel or its schedule changes the hash and reformatting or comments do not.
func KernelHashes(path string, src []byte) (map[string]string, error) {
	f, err := parse.Parse(path, string(src))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		if d.Kernel == nil {
			continue
		}
		sum := sha256.Sum256([]byte(parse.Print(KernelFile(f, d.Kernel.Name))))
		out[d.Kernel.Name] = hex.EncodeToString(sum[:8])
	}
	return out, nil
}

// KernelFile returns the declarations of f for the named kernels: each kernel with its schedule.
func KernelFile(f *parse.File, names ...string) *parse.File {
	out := &parse.File{}
	for _, d := range f.Decls {
		switch {
		case d.Kernel != nil && slices.Contains(names, d.Kernel.Name),
			d.Schedule != nil && slices.Contains(names, d.Schedule.Kernel):
			out.Decls = append(out.Decls, d)
		}
	}
	return out
}

package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/probe"
	"github.com/kgen-dev/kgen/tune"
)

// cmdTune searches faster run-time plan values for the GEMM kernels of a kdsl file on this machine and
// writes them into the lock (merged with its entries for other kernels and classes).
func cmdTune(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tune", stderr, "[flags] file.kdsl")
	budget := fs.Duration("budget", 2*time.Minute, "time for the search, all kernels together (building comes first)")
	kernels := fs.String("kernels", "", "comma-separated kernels to tune (default: every kernel with a GEMM slot)")
	shapes := fs.String("shapes", "", "comma-separated tuning shapes MxNxK of the GEMM (default: "+shapeList(tune.DefaultShapes)+")")
	profile := fs.String("profile", "", "machine profile from kgen probe (default: this machine's static profile)")
	out := fs.String("o", "", "lock to write (default: kgen.lock beside the .kdsl file)")
	variant := fs.String("variant", "", "tune this variant instead of the one the machine selects")
	verbose := fs.Bool("v", false, "print every timed comparison's paired ratios")
	symbols := fs.String("symbols", "", "comma-separated slot fields to search (default: "+strings.Join(passes.TunedSymbols, ",")+"); the other fields and the microkernel start from the lock's entry for the kernel on this class, and a microkernel from it is kept (without an entry, the microkernel candidates are tried first)")
	start := fs.String("start", "", "comma-separated slot.Field=value plan values the search starts from instead of the defaults (sgemm.KC=1024: a point a direct sweep found); the lock entry still needs a win over the defaults")
	tgt := fs.String("target", "", "a GPU sub-target to tune (ptx:sm_90a: block tile, warpgroups, stages of its GEMMs) instead of this machine's CPU")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	if *budget <= 0 {
		return usageError{"-budget must be positive"}
	}
	lockPath := *out
	if lockPath == "" {
		lockPath = filepath.Join(filepath.Dir(path), "kgen.lock")
	}
	if *tgt != "" {
		j := gpuTuneJob{path: path, spec: *tgt, budget: *budget, lockPath: lockPath}
		if j.src, err = os.ReadFile(path); err != nil {
			return err
		}
		if *kernels != "" {
			j.kernels = strings.Split(*kernels, ",")
		}
		if j.shapes, err = parseShapes(*shapes); err != nil {
			return err
		}
		return tuneGPU(j, stdout, stderr)
	}
	opt := tune.Options{Path: path, Budget: *budget, Target: runtime.GOARCH, Variant: *variant, Log: stderr}
	if opt.Src, err = os.ReadFile(path); err != nil {
		return err
	}
	if *verbose {
		opt.Trace = stderr
	}
	if *kernels != "" {
		opt.Kernels = strings.Split(*kernels, ",")
	}
	if opt.Shapes, err = parseShapes(*shapes); err != nil {
		return err
	}
	if *symbols != "" {
		for _, f := range strings.Split(*symbols, ",") {
			if !slices.Contains(passes.TunedSymbols, f) {
				return usageError{fmt.Sprintf("-symbols: %q is not a tuned slot field; want some of %s", f, strings.Join(passes.TunedSymbols, ","))}
			}
			opt.Symbols = append(opt.Symbols, f)
		}
	}
	if opt.Start, err = parseStart(*start); err != nil {
		return err
	}
	p := probe.Static()
	if *profile != "" {
		if p, err = probe.Load(*profile); err != nil {
			return err
		}
	}
	opt.Class = p.Class()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" || p.GOARCH != runtime.GOARCH {
		return fmt.Errorf("kgen tune measures %s variants on this machine (%s): the profile is for %s", p.GOARCH, runtime.GOARCH, p.GOARCH)
	}
	if f, ok := stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			opt.Progress = stderr
		}
	}
	opt.Generate = tuneGenerate
	lock := &tune.Lock{Path: lockPath}
	if _, err := os.Stat(lockPath); err == nil {
		if lock, err = tune.Load(lockPath); err != nil {
			return err
		}
	}
	hashes, err := tune.KernelHashes(path, opt.Src)
	if err != nil {
		return err
	}
	if len(opt.Symbols) > 0 {
		// The new entry replaces the kernel's entry for this class: a search over some fields starts from
		// that entry, so that the fields it leaves alone keep their tuned values (measured together with
		// the new ones against the defaults at the end).
		var notes []string
		opt.Start, notes = seedFromLock(lock, hashes, opt.Start, opt.Kernels, runtime.GOARCH, opt.Variant, opt.Class)
		for _, n := range notes {
			fmt.Fprintln(stderr, "kgen tune:", n)
		}
	}
	rep, err := tune.Run(opt)
	if err != nil {
		return err
	}
	entries := rep.Entries(hashes, runtime.GOARCH, opt.Class)
	for _, e := range entries {
		lock.Set(e)
	}
	if err := os.WriteFile(lockPath+".tmp", lock.Format(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(lockPath+".tmp", lockPath); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kgen tune: variant %s, class %s: %d of %d kernels faster; wrote %s\n", rep.Variant, opt.Class, len(entries), len(rep.Results), lockPath)
	return nil
}

// parseStart reads a -start flag: slot.Field=value pairs, Field one of the tuned slot fields (not the
// microkernel: its candidates are tried first either way); nil for "".
func parseStart(list string) (map[string]int, error) {
	if list == "" {
		return nil, nil
	}
	out := map[string]int{}
	for _, kv := range strings.Split(list, ",") {
		k, v, ok := strings.Cut(kv, "=")
		slot, field, dot := strings.Cut(k, ".")
		if !ok || !dot || slot == "" {
			return nil, usageError{fmt.Sprintf("-start: %q: want slot.Field=value (sgemm.KC=1024)", kv)}
		}
		if !slices.Contains(passes.TunedSymbols, field) {
			return nil, usageError{fmt.Sprintf("-start: %q: %q is not a tuned slot field; want one of %s", kv, field, strings.Join(passes.TunedSymbols, ","))}
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, usageError{fmt.Sprintf("-start: %q: the value must be a positive integer", kv)}
		}
		out[k] = n
	}
	return out, nil
}

// parseShapes reads a -shapes flag (nil for "").
func parseShapes(list string) ([]tune.Shape, error) {
	if list == "" {
		return nil, nil
	}
	var out []tune.Shape
	for _, s := range strings.Split(list, ",") {
		sh, err := tune.ParseShape(s)
		if err != nil {
			return nil, usageError{"-shapes: " + err.Error()}
		}
		out = append(out, sh)
	}
	return out, nil
}

func shapeList(ss []tune.Shape) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.String())
	}
	return strings.Join(out, ",")
}

// tuneGenerate is the tuner's package generator (tune.Options.Generate): kgen gen for this machine's
// target, without tests, with the tuner's own lock of microkernel candidates or none (the search starts from
// the analytical defaults, never from kgen.lock's values).
func tuneGenerate(kdsl, dir, pkg, lock string) error {
	var errb strings.Builder
	if lock == "" {
		lock = "none"
	}
	if err := cmdGen([]string{"-o", dir, "-pkg", pkg, "-targets", "go," + runtime.GOARCH, "-tests=false", "-lock", lock, kdsl}, io.Discard, &errb); err != nil {
		return fmt.Errorf("%v%s", err, errb.String())
	}
	return nil
}

// seedFromLock returns start with the values of the lock's entries for the kernels being tuned added,
// where start does not name them: entries for this target and class whose hash matches the kernel's text
// (a stale entry seeds nothing), of the given variant, or of any when it is "" and the kernel has one
// entry for the class. Tuned slot fields (passes.TunedSymbols) start where the entry has them; its
// microkernel fields (tile, prefetch: ir.KernelFields) choose the candidate kernel the search starts from
// (tune.Options.Start). notes says what was seeded or skipped.
func seedFromLock(lock *tune.Lock, hashes map[string]string, start map[string]int, kernels []string, target, variant, class string) (map[string]int, []string) {
	byKernel := map[string][]tune.Entry{}
	for _, e := range lock.Entries {
		if e.Target != target || e.Class != class || (variant != "" && e.Variant != variant) {
			continue
		}
		if len(kernels) > 0 && !slices.Contains(kernels, e.Kernel) {
			continue
		}
		byKernel[e.Kernel] = append(byKernel[e.Kernel], e)
	}
	var notes []string
	for _, k := range slices.Sorted(maps.Keys(byKernel)) {
		es := byKernel[k]
		if len(es) > 1 {
			notes = append(notes, fmt.Sprintf("%s: %d entries for class %s (variants %s): none seeds the search; name one with -variant", k, len(es), class, entryVariants(es)))
			continue
		}
		e := es[0]
		if h, ok := hashes[k]; !ok || h != e.Hash {
			notes = append(notes, fmt.Sprintf("%s: the lock's entry for class %s is stale (the kernel changed): the search starts from the defaults", k, class))
			continue
		}
		var seeded []string
		for _, sym := range slices.Sorted(maps.Keys(e.Values)) {
			_, field, _ := strings.Cut(sym, ".")
			if _, set := start[sym]; set || !slices.Contains(passes.TunedSymbols, field) && !ir.IsKernelField(field) {
				continue
			}
			if start == nil {
				start = map[string]int{}
			}
			start[sym] = e.Values[sym]
			seeded = append(seeded, fmt.Sprintf("%s=%d", sym, e.Values[sym]))
		}
		if len(seeded) > 0 {
			notes = append(notes, fmt.Sprintf("%s: starting from the lock's entry for class %s (%s/%s): %s", k, class, e.Target, e.Variant, strings.Join(seeded, " ")))
		}
	}
	return start, notes
}

func entryVariants(es []tune.Entry) string {
	var vs []string
	for _, e := range es {
		vs = append(vs, e.Variant)
	}
	return strings.Join(vs, ", ")
}

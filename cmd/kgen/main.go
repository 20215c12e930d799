// Command kgen compiles kdsl kernels into a Go package.
//
//	kgen gen [-o dir] [-pkg name] [-targets go,amd64,arm64,ptx:sm_80,sm_90a,llvm:TRIPLE] [-tests] file.kdsl
//	kgen check file.kdsl
//	kgen ir [-level algo|loop] [-target go] [-print-after pass|all] [-kernel name] file.kdsl
//	kgen fmt [-w] [-d] file.kdsl...
//	kgen probe [-o profile.json] [-quick] [-cores N]
//	kgen report -profile profile.json -bench results.txt [-base results.txt] [-o dir]
//	kgen tune [-budget 2m] [-kernels a,b] [-shapes MxNxK,...] [-profile p.json] [-o kgen.lock] file.kdsl
//	kgen verify [-lock kgen.lock] [-profile p.json] file.kdsl
//	kgen version
//
// Exit status: 0 success, 1 compile errors, 2 usage errors.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/codegen/arm64"
	"github.com/kgen-dev/kgen/codegen/golang"
	"github.com/kgen-dev/kgen/codegen/llvm"
	"github.com/kgen-dev/kgen/codegen/msl"
	"github.com/kgen-dev/kgen/codegen/ptx"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/parse"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

// Version is kgen's version.
const Version = "0.1.0"

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

type compileError struct{ msg string }

func (e compileError) Error() string { return e.msg }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `kgen compiles kdsl tensor kernels into Go packages.

Usage:
	kgen gen [flags] file.kdsl      generate the Go package
	kgen check file.kdsl            report errors only
	kgen ir [flags] file.kdsl       print the IR
	kgen fmt [-w] [-d] file.kdsl... format kdsl source
	kgen probe [flags]              measure this machine into a profile (JSON)
	kgen report [flags]             roofline of benchmark results against a profile
	kgen tune [flags] file.kdsl     measure faster plan values into kgen.lock
	kgen verify [flags] file.kdsl   say whether kgen.lock is stale
	kgen version                    print the version

Run 'kgen <command> -h' for a command's flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "gen":
		err = cmdGen(args[1:], stdout, stderr)
	case "check":
		err = cmdCheck(args[1:], stderr)
	case "ir":
		err = cmdIR(args[1:], stdout, stderr)
	case "fmt":
		err = cmdFmt(args[1:], stdout, stderr)
	case "probe":
		err = cmdProbe(args[1:], stdout, stderr)
	case "report":
		err = cmdReport(args[1:], stdout, stderr)
	case "tune":
		err = cmdTune(args[1:], stdout, stderr)
	case "verify":
		err = cmdVerify(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "kgen %s\n", Version)
		return 0
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "kgen: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "kgen %s: %s\n", args[0], cleanMessage(err.Error()))
		return 2
	case errors.As(err, new(compileError)):
		fmt.Fprint(stderr, err.Error())
		return 1
	}
	fmt.Fprintf(stderr, "kgen %s: %s\n", args[0], cleanMessage(err.Error()))
	return 1
}

// cleanMessage bounds an error that did not come from a kdsl position (file system, backend) and
// escapes what a terminal would interpret: it may quote a path or generated text.
func cleanMessage(s string) string {
	const max = 2000
	if len(s) > max {
		s = s[:max] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return parse.Printable(s)
}

func newFlags(name string, stderr io.Writer, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("kgen "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: kgen %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}

// load reads and checks one kdsl file.
func load(path string) ([]*ir.Kernel, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ks, err := check.File(path, string(src))
	if err != nil {
		var list parse.ErrorList
		if errors.As(err, &list) {
			return nil, compileError{parse.Format(err, string(src))}
		}
		return nil, err
	}
	return ks, nil
}

func oneFile(fs *flag.FlagSet) (string, error) {
	if fs.NArg() != 1 {
		return "", usageError{"want exactly one .kdsl file"}
	}
	return fs.Arg(0), nil
}

func cmdCheck(args []string, stderr io.Writer) error {
	fs := newFlags("check", stderr, "file.kdsl")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	_, err = load(path)
	return err
}

func cmdIR(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ir", stderr, "[flags] file.kdsl")
	level := fs.String("level", "loop", "IR level to print: algo or loop")
	tgt := fs.String("target", "go", "target machine model: "+strings.Join(target.Names(), ", ")+" (ptx:sm_80, ptx:sm_90a, msl:3.1 name a sub-target)")
	after := fs.String("print-after", "", "print the loop IR after this pass (of the target's pipeline) or after all")
	kname := fs.String("kernel", "", "only this kernel")
	host := fs.Bool("host", false, "use the cache sizes probed from this machine instead of the static target model (which gen uses)")
	lockPath := fs.String("lock", "", lockFlagHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	if *level != "algo" && *level != "loop" {
		return usageError{"-level must be algo or loop"}
	}
	lookup := target.Lookup
	if *host {
		lookup = target.Host
	}
	m, err := lookup(*tgt)
	if err != nil {
		return usageError{err.Error()}
	}
	if names := passes.Names(m); *after != "" && *after != "all" && !contains(names, *after) {
		return usageError{fmt.Sprintf("-print-after: unknown pass %q (target %s runs: %s)", *after, m.Name, strings.Join(names, ", "))}
	}
	ks, kl, err := loadLocked(path, *lockPath)
	if err != nil {
		return err
	}
	found := false
	for _, k := range ks {
		if *kname != "" && k.Name != *kname {
			continue
		}
		found = true
		if *level == "algo" {
			fmt.Fprint(stdout, k.String())
			continue
		}
		opt := passes.Options{}
		if *after != "" {
			opt.After = func(pass string, f *ir.Func, changed bool) {
				if *after != "all" && *after != pass {
					return
				}
				if !changed {
					fmt.Fprintf(stdout, "// after %s: %s unchanged\n", pass, k.Name)
					return
				}
				fmt.Fprintf(stdout, "// after %s:\n%s\n", pass, f)
			}
		}
		f, err := kl.compile(k, m, opt, stderr)
		if err != nil {
			return err
		}
		if *after == "" {
			fmt.Fprintln(stdout, f)
		}
	}
	if !found {
		return usageError{fmt.Sprintf("no kernel %q in %s", *kname, path)}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// backends maps target names to backends. The portable Go backend always runs.
func backends(module string, tests bool) map[string]codegen.Backend {
	return map[string]codegen.Backend{
		"go":    golang.Backend{Module: module, Tests: tests},
		"amd64": amd64.Backend{},
		"arm64": arm64.Backend{},
		"msl":   msl.Backend{Tests: tests},
		"llvm":  llvm.Backend{},
		"ptx":   ptx.Backend{Tests: tests},
	}
}

func cmdGen(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gen", stderr, "[flags] file.kdsl")
	out := fs.String("o", ".", "output directory")
	pkg := fs.String("pkg", "", "Go package name (default: the output directory's name)")
	targets := fs.String("targets", "go", "comma-separated targets (go is always included)")
	tests := fs.Bool("tests", true, "also write kgen_test.go, checking every kernel against the interpreter")
	module := fs.String("module", "github.com/kgen-dev/kgen", "import path of kgen (for its rt, f16 and test packages)")
	host := fs.Bool("host", false, "size cache blocks from this machine's probed caches (default: the static target model, so that generated files are the same on every machine)")
	lockPath := fs.String("lock", "", lockFlagHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	name := *pkg
	if name == "" {
		abs, err := filepath.Abs(*out)
		if err != nil {
			return err
		}
		name = filepath.Base(abs)
	}
	all := backends(*module, *tests)
	specs, err := target.ParseSpecList("go," + *targets)
	if err != nil {
		return usageError{err.Error()}
	}
	// The specs grouped by backend, in the order given; go always first.
	var chosen []codegen.Backend
	bySpecs := map[string][]string{}
	for _, spec := range specs {
		tname, _, _ := strings.Cut(spec, ":")
		b, ok := all[tname]
		if !ok {
			var names []string
			for _, n := range target.Names() {
				if all[n] != nil {
					names = append(names, n)
				}
			}
			return usageError{fmt.Sprintf("no backend for target %q yet (available: %s)", tname, strings.Join(names, ", "))}
		}
		if bySpecs[tname] == nil {
			chosen = append(chosen, b)
		}
		bySpecs[tname] = append(bySpecs[tname], spec)
	}
	for _, b := range chosen {
		if _, multi := b.(codegen.MultiBackend); !multi && len(bySpecs[b.Name()]) > 1 {
			return usageError{fmt.Sprintf("target %s takes one sub-target per package (given: %s)", b.Name(), strings.Join(bySpecs[b.Name()], ", "))}
		}
	}
	ks, kl, err := loadLocked(path, *lockPath)
	if err != nil {
		return err
	}
	if len(ks) == 0 {
		// A package without kernels would export nothing: say so rather than write one.
		return compileError{fmt.Sprintf("%s: no kernels: nothing to generate", path)}
	}
	// By default generation does not depend on the machine it runs on: the static model (cache sizes)
	// makes committed files reproducible anywhere. -host tunes the portable blocks to this machine.
	lookup := target.Lookup
	if *host {
		lookup = target.Host
	}
	// Every target spec gets the kernels compiled by its own pipeline: its variants' tiles and blocks
	// are in the plan, and its schedule blocks (for amd64 { ... }) apply.
	pkgs := map[string]*codegen.Package{}
	for _, b := range chosen {
		for _, spec := range bySpecs[b.Name()] {
			m, err := lookup(spec)
			if err != nil {
				return err
			}
			p := &codegen.Package{Name: name, Source: filepath.Base(path), Module: *module, Target: spec}
			for _, k := range ks {
				f, err := kl.compile(k, m, passes.Options{}, stderr)
				if err != nil {
					return err
				}
				gp, err := kl.gpuPlan(k, m)
				if err != nil {
					return err
				}
				p.Kernels = append(p.Kernels, codegen.Kernel{K: k, F: f, GPUPlan: gp})
				if b.Name() != "go" && len(m.Native()) > 0 {
					warnTargetDirectives(stderr, k, f, b.Name())
				}
			}
			if b.Name() != "go" && len(m.Native()) > 0 {
				// A SIMD target's variants install their routines into the portable nest's slots.
				if err := codegen.SameSlots(pkgs["go"], p); err != nil {
					// The target's schedule made other slots: its backend implements the portable
					// nest's slots instead, with the target's variant plans.
					fmt.Fprintf(stderr, "kgen gen: warning: target %s: %v; its variants implement the portable nest's slots\n", b.Name(), err)
					if p, err = withVariants(pkgs["go"], p); err != nil {
						return fmt.Errorf("target %s: %v", b.Name(), err)
					}
					p.Target = spec
				}
			}
			pkgs[spec] = p
		}
	}
	var files []codegen.File
	for _, b := range chosen {
		var ps []*codegen.Package
		for _, spec := range bySpecs[b.Name()] {
			ps = append(ps, pkgs[spec])
		}
		var fsOut []codegen.File
		if mb, ok := b.(codegen.MultiBackend); ok {
			fsOut, err = mb.GenerateAll(ps)
		} else {
			fsOut, err = b.Generate(ps[0])
		}
		if err != nil {
			return fmt.Errorf("backend %s: %v", b.Name(), err)
		}
		files = append(files, fsOut...)
	}
	// Write everything only after everything was generated: no partial output on error.
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		dst := filepath.Join(*out, f.Name)
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, f.Data) {
			continue
		}
		tmp := dst + ".tmp"
		if err := os.WriteFile(tmp, f.Data, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "kgen: wrote %d files for %d kernels to %s\n", len(files), len(ks), *out)
	return nil
}

// withVariants returns the portable package port with the variant plans of tgt (the same kernels
// compiled for another target) in each kernel's function.
func withVariants(port, tgt *codegen.Package) (*codegen.Package, error) {
	out := *port
	out.Kernels = nil
	for i, k := range port.Kernels {
		f := *k.F
		f.Variants = tgt.Kernels[i].F.Variants
		if err := ir.VerifyFunc(&f); err != nil {
			return nil, fmt.Errorf("kernel %s: %v", k.K.Name, err)
		}
		out.Kernels = append(out.Kernels, codegen.Kernel{K: k.K, F: &f})
	}
	return &out, nil
}

// warnTargetDirectives says which directives of k's `for tgt { ... }` block do not reach the generated
// package: it holds one loop nest, the portable one, and a target's variants take only their GEMM tiles
// and cache blocks from the target's plan.
func warnTargetDirectives(stderr io.Writer, k *ir.Kernel, f *ir.Func, tgt string) {
	for _, d := range k.Schedule {
		if d.Target != tgt || (d.Name == "tile" && len(f.Variants) > 0) {
			continue
		}
		fmt.Fprintf(stderr, "kgen gen: warning: kernel %s: for %s { %s ... } changes kgen ir -target %s only: the package's loop nest is the portable one, and only the tile sizes of GEMM indices reach the %s variants\n",
			k.Name, tgt, d.Name, tgt, tgt)
	}
}

func cmdFmt(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fmt", stderr, "[-w] [-d] file.kdsl...")
	write := fs.Bool("w", false, "write the result to the file instead of stdout")
	diff := fs.Bool("d", false, "list files whose formatting differs (exit 1 if any)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{"want one or more .kdsl files"}
	}
	differs := false
	for _, path := range fs.Args() {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parse.Parse(path, string(src))
		if err != nil {
			return compileError{parse.Format(err, string(src))}
		}
		res := parse.Print(f)
		switch {
		case *diff:
			if res != string(src) {
				fmt.Fprintln(stdout, path)
				differs = true
			}
		case *write:
			if res != string(src) {
				if err := os.WriteFile(path, []byte(res), 0o644); err != nil {
					return err
				}
			}
		default:
			fmt.Fprint(stdout, res)
		}
	}
	if differs {
		return compileError{""}
	}
	return nil
}

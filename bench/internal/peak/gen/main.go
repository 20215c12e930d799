// Command gen writes the FMA-peak kernels of package peak (peak_amd64.s and
// peak_amd64.go) with kgen's amd64 code generator. Run it through go generate
// in internal/peak; the output is committed.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kgen-dev/kgen/codegen/amd64"
)

func main() {
	// A private flag set: avo's build package registers flags on flag.CommandLine.
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	out := fs.String("out", ".", "output directory")
	fs.Parse(os.Args[1:])
	asm, stubs, err := amd64.Generate("peak", nil, amd64.DefaultPeaks()...)
	if err == nil {
		err = os.WriteFile(filepath.Join(*out, "peak_amd64.s"), asm, 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(*out, "peak_amd64.go"), stubs, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

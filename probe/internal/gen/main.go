// Command gen writes the measuring kernels of package probe (package kerngen says which) into -out;
// go generate runs it in probe/, and the output is committed.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/kgen-dev/kgen/probe/internal/kerngen"
)

func main() {
	// A private flag set: avo's build package registers flags on flag.CommandLine.
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	out := fs.String("out", ".", "output directory")
	fs.Parse(os.Args[1:])
	files, err := kerngen.Files()
	if err == nil {
		names := make([]string, 0, len(files))
		for name := range files {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if err = os.WriteFile(filepath.Join(*out, name), files[name], 0o644); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

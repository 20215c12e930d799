// Command gen writes the generated arm64 GEMM microkernels of package internal/mk
// (mk_arm64.s, stub_arm64.go) into the current directory, or into -o.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"
	"sort"

	"github.com/kgen-dev/kgen/codegen/arm64/internal/mkspec"
)

func main() {
	out := flag.String("o", ".", "output directory")
	flag.Parse()
	files, err := mkspec.Files()
	if err != nil {
		log.Fatal(err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(*out, n), files[n], 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

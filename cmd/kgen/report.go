package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kgen-dev/kgen/probe"
	"github.com/kgen-dev/kgen/probe/report"
)

// cmdReport places benchmark results on the roofline of a machine profile: roofline.md and
// roofline.svg in the output directory.
func cmdReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("report", stderr, "-profile profile.json -bench results.txt [-base results.txt] [-o dir]")
	prof := fs.String("profile", "", "machine profile `file` written by kgen probe (required)")
	bench := fs.String("bench", "", "`file` of go test -bench output of the generated package (required)")
	base := fs.String("base", "", "a second result `file`, the untuned (default) run: adds the \"tuned vs default\" column")
	out := fs.String("o", ".", "output `directory` for roofline.md and roofline.svg")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *prof == "" || *bench == "" {
		return usageError{"-profile and -bench are required"}
	}
	p, err := probe.Load(*prof)
	if err != nil {
		return err
	}
	results, err := report.ParseFile(*bench)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		return fmt.Errorf("%s: no benchmark results (want the output of go test -bench)", *bench)
	}
	var baseResults []report.Result
	if *base != "" {
		if baseResults, err = report.ParseFile(*base); err != nil {
			return err
		}
	}
	r, err := report.Build(p, results, baseResults)
	if err != nil {
		return fmt.Errorf("%s: %v", *bench, err)
	}
	if len(r.Rows) == 0 {
		return fmt.Errorf("%s: none of %d benchmarks could be placed: %s", *bench, len(results), strings.Join(r.Skipped, "; "))
	}
	command := "kgen report -profile " + filepath.Base(*prof) + " -bench " + filepath.Base(*bench)
	if *base != "" {
		command += " -base " + filepath.Base(*base)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	// Both files or neither: both temporaries are written before either is renamed.
	md, err := newPendingFile(filepath.Join(*out, "roofline.md"))
	if err != nil {
		return err
	}
	defer md.abort()
	svg, err := newPendingFile(filepath.Join(*out, "roofline.svg"))
	if err != nil {
		return err
	}
	defer svg.abort()
	if err := md.write(r.Markdown(command, *base != "")); err != nil {
		return err
	}
	if err := svg.write(r.SVG()); err != nil {
		return err
	}
	if err := md.rename(); err != nil {
		return err
	}
	if err := svg.rename(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kgen: placed %d points (%d not placed) in %s\n", len(r.Rows), len(r.Skipped), filepath.Join(*out, "roofline.{md,svg}"))
	return nil
}

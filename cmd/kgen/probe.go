package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kgen-dev/kgen/probe"
	"github.com/kgen-dev/kgen/probe/gpuprobe"
)

// measure is probe.Measure; the command's tests replace it to check the file handling without the
// seconds of measuring.
var measure = probe.Measure

// cmdProbe measures this machine and writes its profile (probe.Profile as JSON).
func cmdProbe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("probe", stderr, "[-o profile.json] [-quick] [-cores N]")
	out := fs.String("o", "profile.json", "output `file`")
	quick := fs.Bool("quick", false, "short timings: a few seconds in all, noisier figures (tests, CI)")
	cores := fs.Int("cores", 0, "workers of the all-core figures (default: every CPU)")
	measureCaches := fs.Bool("measure-caches", false, "estimate the cache sizes from the latency curve even where sysfs lists them")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *cores < 0 || *cores > 4096 {
		return usageError{fmt.Sprintf("-cores %d: want a count from 1 to 4096 (or 0 for every CPU)", *cores)}
	}
	// Open the output before measuring: an unwritable path fails at once, not after the probe.
	f, err := newPendingFile(*out)
	if err != nil {
		return err
	}
	defer f.abort()
	p, err := measure(probe.Options{GPUs: gpuprobe.CUDA, Quick: *quick, Cores: *cores, MeasureCaches: *measureCaches,
		Progress: probe.NewProgress(stderr, isTerminal(stderr))})
	if err != nil {
		return err
	}
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	if err := f.commit(b); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kgen: wrote the profile of %s (class %s) to %s\n", p.CPU, p.Class(), *out)
	return nil
}

// isTerminal reports whether w is a character device (a terminal): the progress bar is drawn there,
// plain lines elsewhere.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// pendingFile is an output written whole or not at all: a temporary file beside the destination,
// renamed over it by commit, removed by abort.
type pendingFile struct {
	f    *os.File
	dst  string
	done bool
}

func newPendingFile(dst string) (*pendingFile, error) {
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", dst)
	}
	f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %v", dst, err)
	}
	return &pendingFile{f: f, dst: dst}, nil
}

// write fills the temporary file and closes it; rename then moves it over the destination. Outputs
// that go together are all written before any is renamed.
func (p *pendingFile) write(data []byte) error {
	_, err := p.f.Write(data)
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(p.f.Name(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %v", p.dst, err)
	}
	return nil
}

func (p *pendingFile) rename() error {
	if err := os.Rename(p.f.Name(), p.dst); err != nil {
		return fmt.Errorf("writing %s: %v", p.dst, err)
	}
	p.done = true
	return nil
}

// commit is write and rename.
func (p *pendingFile) commit(data []byte) error {
	if err := p.write(data); err != nil {
		return err
	}
	return p.rename()
}

func (p *pendingFile) abort() {
	if !p.done {
		p.f.Close()
		os.Remove(p.f.Name())
		p.done = true
	}
}

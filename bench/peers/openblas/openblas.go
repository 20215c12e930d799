//go:build peers && cgo

package openblas

import (
	"fmt"
	"os"

	"github.com/kgen-dev/kgen/bench/peers/cblas"
)

// DefaultPath is Debian's libopenblas0-pthread.
const DefaultPath = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"

// Open loads OpenBLAS from path, sets its thread count and returns it with
// a short name and a longer description of the kernels it runs: openblas_get_corename() (which
// honours OPENBLAS_CORETYPE, read when the library loads) and
// openblas_get_config().
func Open(path string, threads int) (l *cblas.Lib, kernel, detail string, err error) {
	l, err = cblas.Open(path)
	if err != nil {
		return nil, "", "", err
	}
	if err := l.CallInt("openblas_set_num_threads", threads); err != nil {
		return nil, "", "", err
	}
	core, err := l.String("openblas_get_corename")
	if err != nil {
		return nil, "", "", err
	}
	kernel = core + " (autodetected)"
	if ct := os.Getenv("OPENBLAS_CORETYPE"); ct != "" {
		kernel = fmt.Sprintf("%s (CORETYPE=%s)", core, ct)
	}
	desc := "core " + core
	if ct := os.Getenv("OPENBLAS_CORETYPE"); ct != "" {
		desc += fmt.Sprintf(" (OPENBLAS_CORETYPE=%s)", ct)
	} else {
		desc += " (autodetected)"
	}
	if n, err := l.Int("openblas_get_num_threads"); err == nil {
		desc += fmt.Sprintf(", %d thr", n)
	}
	if cfg, err := l.String("openblas_get_config"); err == nil {
		desc += "; " + cfg
	}
	return l, kernel, desc, nil
}

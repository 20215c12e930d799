//go:build peers && cgo

package blis

import (
	"fmt"
	"os"

	"github.com/kgen-dev/kgen/bench/peers/cblas"
)

// DefaultPath is Debian's libblis4-openmp.
const DefaultPath = "/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4"

// Archs returns the configuration names this BLIS knows, indexed by
// arch_t (the number BLIS_ARCH_TYPE takes): bli_arch_string(0), (1), ...
// up to "generic", which is always the last. A name does not mean its
// kernels are compiled in (Debian's x86_64 build has the x86 ones). Nil if
// "generic" does not come within 64 names.
func Archs(l *cblas.Lib) []string {
	var out []string
	for i := 0; i < 64; i++ {
		s, err := l.StringInt("bli_arch_string", i)
		if err != nil {
			return nil
		}
		out = append(out, s)
		if s == "generic" {
			return out
		}
	}
	return nil
}

// Arch returns the configuration BLIS runs (bli_arch_string(bli_arch_query_id())).
func Arch(l *cblas.Lib) (string, error) {
	id, err := l.Int("bli_arch_query_id")
	if err != nil {
		return "", err
	}
	return l.StringInt("bli_arch_string", id)
}

// Open loads BLIS from path, sets its thread count and returns it with a
// short name and a description of the kernels it runs: bli_arch_string(bli_arch_query_id())
// (which honours BLIS_ARCH_TYPE) and the version. It refuses a BLIS whose
// BLAS/CBLAS integers are not 32-bit (the bindings pass C int).
func Open(path string, threads int) (l *cblas.Lib, kernel, detail string, err error) {
	l, err = cblas.Open(path)
	if err != nil {
		return nil, "", "", err
	}
	if sz, err := l.Int64("bli_info_get_blas_int_type_size"); err == nil && sz != 32 {
		return nil, "", "", fmt.Errorf("blis: %s uses %d-bit BLAS integers; need 32", path, sz)
	}
	if err := l.CallInt64("bli_thread_set_num_threads", int64(threads)); err != nil {
		return nil, "", "", err
	}
	arch, err := Arch(l)
	if err != nil {
		return nil, "", "", err
	}
	kernel = arch + " (autodetected)"
	if at := os.Getenv("BLIS_ARCH_TYPE"); at != "" {
		kernel = fmt.Sprintf("%s (ARCH_TYPE=%s)", arch, at)
	}
	desc := "arch " + arch
	if at := os.Getenv("BLIS_ARCH_TYPE"); at != "" {
		desc += fmt.Sprintf(" (BLIS_ARCH_TYPE=%s)", at)
	} else {
		desc += " (autodetected)"
	}
	if n, err := l.Int64("bli_thread_get_num_threads"); err == nil {
		desc += fmt.Sprintf(", %d thr", n)
	}
	if v, err := l.String("bli_info_get_version_str"); err == nil {
		desc += "; BLIS " + v
	}
	return l, kernel, desc, nil
}

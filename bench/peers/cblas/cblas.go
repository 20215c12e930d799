//go:build peers && cgo

package cblas

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

enum { RowMajor = 101, NoTrans = 111 };
typedef void (*sgemm_t)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
typedef void (*dgemm_t)(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*, int);

typedef struct { void *h; sgemm_t sg; dgemm_t dg; } lib_t;

static lib_t *lib_open(const char *path, char **err) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) { *err = dlerror(); return NULL; }
	lib_t *l = calloc(1, sizeof *l);
	l->h = h;
	l->sg = (sgemm_t)dlsym(h, "cblas_sgemm");
	l->dg = (dgemm_t)dlsym(h, "cblas_dgemm");
	if (!l->sg || !l->dg) { *err = "no cblas_sgemm/cblas_dgemm"; free(l); return NULL; }
	return l;
}
static void *lib_sym(lib_t *l, const char *name) { return dlsym(l->h, name); }

static void sgemm(lib_t *l, int m, int k, int n, const float *a, const float *b, float *c) {
	l->sg(RowMajor, NoTrans, NoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}
static void dgemm(lib_t *l, int m, int k, int n, const double *a, const double *b, double *c) {
	l->dg(RowMajor, NoTrans, NoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
}
// The batch loop runs in C: one cgo call per batch, not per product.
static void sgemm_batch(lib_t *l, int count, int m, int k, int n, const float *a, const float *b, float *c) {
	for (int p = 0; p < count; p++)
		l->sg(RowMajor, NoTrans, NoTrans, m, n, k, 1.0f, a + (long)p*m*k, k, b + (long)p*k*n, n, 0.0f, c + (long)p*m*n, n);
}

static const char *call_str(void *f) { return ((const char *(*)(void))f)(); }
static const char *call_str_int(void *f, int x) { return ((const char *(*)(int))f)(x); }
static int call_int(void *f) { return ((int (*)(void))f)(); }
static long long call_i64(void *f) { return ((long long (*)(void))f)(); }
static void call_void_int(void *f, int x) { ((void (*)(int))f)(x); }
static void call_void_i64(void *f, long long x) { ((void (*)(long long))f)(x); }
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Lib is an opened CBLAS library. Its operands are row-major and
// contiguous; all calls compute C = A·B (alpha 1, beta 0).
type Lib struct {
	Path string
	l    *C.lib_t
}

// Open dlopens path with RTLD_LOCAL and looks up cblas_sgemm and cblas_dgemm.
func Open(path string) (*Lib, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var cerr *C.char
	l := C.lib_open(cp, &cerr)
	if l == nil {
		return nil, fmt.Errorf("cblas: open %s: %s", path, C.GoString(cerr))
	}
	return &Lib{Path: path, l: l}, nil
}

// Sym returns the address of symbol name in the library, or nil.
func (l *Lib) Sym(name string) unsafe.Pointer {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.lib_sym(l.l, cn)
}

var errNoSym = errors.New("cblas: no such symbol")

// String calls `const char *name(void)`.
func (l *Lib) String(name string) (string, error) {
	f := l.Sym(name)
	if f == nil {
		return "", fmt.Errorf("%w: %s", errNoSym, name)
	}
	return C.GoString(C.call_str(f)), nil
}

// StringInt calls `const char *name(int)`.
func (l *Lib) StringInt(name string, x int) (string, error) {
	f := l.Sym(name)
	if f == nil {
		return "", fmt.Errorf("%w: %s", errNoSym, name)
	}
	return C.GoString(C.call_str_int(f, C.int(x))), nil
}

// Int calls `int name(void)` (also right for functions returning an enum).
func (l *Lib) Int(name string) (int, error) {
	f := l.Sym(name)
	if f == nil {
		return 0, fmt.Errorf("%w: %s", errNoSym, name)
	}
	return int(C.call_int(f)), nil
}

// Int64 calls `int64_t name(void)`.
func (l *Lib) Int64(name string) (int64, error) {
	f := l.Sym(name)
	if f == nil {
		return 0, fmt.Errorf("%w: %s", errNoSym, name)
	}
	return int64(C.call_i64(f)), nil
}

// CallInt calls `void name(int)`.
func (l *Lib) CallInt(name string, x int) error {
	f := l.Sym(name)
	if f == nil {
		return fmt.Errorf("%w: %s", errNoSym, name)
	}
	C.call_void_int(f, C.int(x))
	return nil
}

// CallInt64 calls `void name(int64_t)`.
func (l *Lib) CallInt64(name string, x int64) error {
	f := l.Sym(name)
	if f == nil {
		return fmt.Errorf("%w: %s", errNoSym, name)
	}
	C.call_void_i64(f, C.longlong(x))
	return nil
}

func dims(m, k, n int, la, lb, lc int) {
	if m < 0 || k < 0 || n < 0 || m > math.MaxInt32 || k > math.MaxInt32 || n > math.MaxInt32 {
		panic("cblas: dimension out of range")
	}
	if la < m*k || lb < k*n || lc < m*n {
		panic("cblas: operand too short")
	}
}

// Sgemm computes c = a·b (m×k by k×n).
func (l *Lib) Sgemm(m, k, n int, a, b, c []float32) {
	dims(m, k, n, len(a), len(b), len(c))
	if m == 0 || n == 0 || k == 0 {
		return
	}
	C.sgemm(l.l, C.int(m), C.int(k), C.int(n), (*C.float)(&a[0]), (*C.float)(&b[0]), (*C.float)(&c[0]))
}

// Dgemm computes c = a·b (m×k by k×n).
func (l *Lib) Dgemm(m, k, n int, a, b, c []float64) {
	dims(m, k, n, len(a), len(b), len(c))
	if m == 0 || n == 0 || k == 0 {
		return
	}
	C.dgemm(l.l, C.int(m), C.int(k), C.int(n), (*C.double)(&a[0]), (*C.double)(&b[0]), (*C.double)(&c[0]))
}

// SgemmBatch computes count products whose operands lie back to back in
// a, b and c, looping in C.
func (l *Lib) SgemmBatch(count, m, k, n int, a, b, c []float32) {
	dims(m, k, n, len(a)/max(count, 1), len(b)/max(count, 1), len(c)/max(count, 1))
	if count <= 0 || m == 0 || n == 0 || k == 0 {
		return
	}
	C.sgemm_batch(l.l, C.int(count), C.int(m), C.int(k), C.int(n), (*C.float)(&a[0]), (*C.float)(&b[0]), (*C.float)(&c[0]))
}

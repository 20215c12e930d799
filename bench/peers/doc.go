// Package peers groups the C BLAS libraries kgen-bench compares against.
//
// The bindings live in sub-packages built only with -tags peers (and cgo):
// cblas opens a CBLAS shared library with dlopen(RTLD_LOCAL) and calls
// cblas_sgemm/cblas_dgemm through the handle; openblas and blis add each
// library's own set-up and self-description (core name, thread count).
//
// Why dlopen: libopenblas and libblis both export cblas_sgemm, cblas_dgemm
// and the Fortran sgemm_/dgemm_. Linked with -l into one binary, the dynamic
// linker would bind every call to whichever library comes first, silently
// benchmarking one library twice. A handle opened with RTLD_LOCAL resolves
// symbols inside that library only. kgen-bench still runs each peer in its
// own process (it re-executes itself with -peer NAME) so that the libraries'
// environment (OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS,
// BLIS_ARCH_TYPE, OMP_NUM_THREADS) is set only there and their thread pools
// never share a process with the Go runtime's measurements.
package peers

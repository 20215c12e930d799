package llvm

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
)

// freestandingIO is the driver's prelude for a static aarch64 Linux executable without a C library
// (there is no aarch64 sysroot to link against): read, write and exit as system calls, malloc a bump
// allocator over a static arena (free releases everything when the last buffer is freed), and the
// memset and memcpy that LLVM may call for zeroing and copying loops. _start calls main.
const freestandingIO = `#include <stdint.h>
#include <stddef.h>
#include "%s.h"

static long sys3(long n, long a, long b, long c) {
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0;
}
static void quit(int code) { sys3(93, code, 0, 0); for (;;) {} }
static const char msg[] = "driver: short input or unknown kernel\n";
static int got(void *p, size_t n) {
	char *c = p;
	while (n > 0) {
		long r = sys3(63, 0, (long)c, (long)n);
		if (r <= 0) return 0;
		c += r; n -= r;
	}
	return 1;
}
static void rd(void *p, size_t n) { if (!got(p, n)) { sys3(64, 2, (long)msg, sizeof msg - 1); quit(2); } }
static int next(int32_t *which) { return got(which, 4); }
static char obuf[1 << 16];
static size_t olen;
static void flush(void) {
	size_t off = 0;
	while (off < olen) { long r = sys3(64, 1, (long)(obuf + off), (long)(olen - off)); if (r <= 0) quit(3); off += r; }
	olen = 0;
}
static void wr(const void *p, size_t n) {
	const char *c = p;
	while (n > 0) {
		size_t k = sizeof obuf - olen < n ? sizeof obuf - olen : n;
		for (size_t i = 0; i < k; i++) obuf[olen + i] = c[i];
		olen += k; c += k; n -= k;
		if (olen == sizeof obuf) flush();
	}
}
static void unknown(int32_t which) { (void)which; flush(); sys3(64, 2, (long)msg, sizeof msg - 1); quit(2); }
static void done(void) { flush(); }
static _Alignas(64) char arena[256 << 20];
static size_t used, live;
void *malloc(size_t n) {
	size_t at = (used + 63) & ~(size_t)63;
	if (at + n > sizeof arena) return 0;
	used = at + n; live++;
	return arena + at;
}
void free(void *p) { if (p && --live == 0) used = 0; }
void *memset(void *d, int c, size_t n) { char *p = d; while (n--) *p++ = (char)c; return d; }
void *memcpy(void *d, const void *s, size_t n) { char *p = d; const char *q = s; while (n--) *p++ = *q++; return d; }
int main(void);
void _start(void) { quit(main()); }
`

// freestandingPages is pages and unpages (guardedBufs) for the freestanding driver: mmap, mprotect and
// munmap as aarch64 Linux system calls.
const freestandingPages = `
#define PG 4096
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
	return x0;
}
static unsigned char *pages(size_t n) {
	long p = sys6(222, 0, (long)(n + PG), 3, 0x22, -1, 0); /* mmap read|write, private|anonymous */
	if ((unsigned long)p > -4096UL || sys6(226, p + (long)n, PG, 0, 0, 0, 0) != 0) quit(4); /* mprotect none */
	return (unsigned char *)p;
}
static void unpages(unsigned char *p, size_t n) { sys6(215, (long)p, (long)(n + PG), 0, 0, 0, 0); }
`

// TestAarch64Qemu compiles kernels.kdsl for aarch64 (opt and llc with -mtriple), links it with the
// freestanding driver (clang --target=aarch64-linux-gnu -ffreestanding, ld.lld -static -nostdlib)
// and runs it under qemu-aarch64 on 3 ragged shapes per kernel: every kernel against the interpreter
// on aarch64 code.
func TestAarch64Qemu(t *testing.T) {
	t.Parallel()
	p := library(t)
	driver, qemu := aarch64Driver(t, p, driverWith(p, freestandingIO))
	runCalls(t, driver, randomCalls(t, p, rand.New(rand.NewPCG(13, 7)), 3), qemu)
}

// aarch64Driver builds package p and the freestanding driver source for aarch64 (opt and llc with
// -mtriple, clang --target -ffreestanding, ld.lld -static -nostdlib) and returns the executable and
// qemu-aarch64's path.
func aarch64Driver(t *testing.T, p *codegen.Package, driver string) (string, string) {
	t.Helper()
	clang := tool(t, "clang-14", "clang")
	opt, llc := tool(t, "opt", "opt-14"), tool(t, "llc", "llc-14")
	lld := tool(t, "ld.lld", "ld.lld-14")
	qemu := tool(t, "qemu-aarch64")
	dir := writePackage(t, p, driver)
	const triple = "aarch64-linux-gnu"
	run(t, dir, opt, "-O3", "-mtriple="+triple, p.Name+".ll", "-o", "k.bc")
	run(t, dir, llc, "-O3", "-mtriple="+triple, "-filetype=obj", "k.bc", "-o", "k.o")
	run(t, dir, clang, "--target="+triple, "-O1", "-w", "-ffreestanding", "-fno-builtin", "-fno-stack-protector",
		"-nostdlib", "-c", "driver.c", "-o", "driver.o")
	run(t, dir, lld, "-static", "-nostdlib", "driver.o", "k.o", "-o", "driver")
	return filepath.Join(dir, "driver"), qemu
}

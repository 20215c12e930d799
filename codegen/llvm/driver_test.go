package llvm

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// driverC is a C program that runs kernels of package pkg on arguments read from stdin. Each call on
// stdin is: the kernel's number (int32, its index in p.Kernels), the dims (int64 each), then each
// parameter in order: a tensor as an int64 element count and its elements in storage form, a scalar
// as its storage form. For each call it writes the status (int32) and then every out and inout tensor's
// elements, whatever the status. Input ends at end of file.
func driverC(p *codegen.Package) string {
	return driverWith(p, hostedIO)
}

// hostedIO is the driver's input, output and memory through the C library.
const hostedIO = `#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "%s.h"

static void rd(void *p, size_t n) {
	if (n && fread(p, 1, n, stdin) != n) { fprintf(stderr, "short input\n"); exit(2); }
}
static int next(int32_t *which) { return fread(which, 4, 1, stdin) == 1; }
static void wr(const void *p, size_t n) { if (n) fwrite(p, 1, n, stdout); }
static void unknown(int32_t which) { fprintf(stderr, "unknown kernel %%d\n", which); exit(2); }
static void done(void) {}
`

// driverWith is the driver with the given prelude (a format with the package name): it defines rd,
// next, wr, unknown, done, malloc and free. The tensors are malloc'd buffers followed by canaries.
func driverWith(p *codegen.Package, prelude string) string {
	return driverBufs(p, prelude, canaryBufs)
}

// canaryBufs places each tensor in a malloc'd buffer followed by 64 canary bytes.
const canaryBufs = `
/* Each tensor is followed by 64 canary bytes: a kernel writing past its end makes the status 99. */
static void *rdbuf(int64_t *len, size_t size) {
	rd(len, 8);
	unsigned char *p = malloc(*len * size + 64);
	rd(p, *len * size);
	for (int i = 0; i < 64; i++) p[*len * size + i] = 0xa5;
	return p;
}
static int intact(const void *p, size_t n) {
	const unsigned char *c = (const unsigned char *)p + n;
	for (int i = 0; i < 64; i++) if (c[i] != 0xa5) return 0;
	return 1;
}
static void release(void *p, size_t n) { (void)n; free(p); }
`

// guardedBufs places each tensor at the end of its own pages, right before an inaccessible page (after
// hostedPages or freestandingPages: pages(n) maps n read-write bytes, n a multiple of PG, and one
// inaccessible page after them; unpages unmaps them): a read or a write past the end faults, and
// canaries fill the first page before the tensor (a write before its start makes the status 99).
const guardedBufs = `
static size_t span(size_t n) { return (n + PG - 1) / PG * PG; }
static void *rdbuf(int64_t *len, size_t size) {
	rd(len, 8);
	size_t n = *len * size, s = span(n);
	unsigned char *base = pages(s), *p = base + s - n;
	for (size_t i = 0; i < s - n; i++) base[i] = 0xa5;
	rd(p, n);
	return p;
}
static int intact(const void *p, size_t n) {
	const unsigned char *base = (const unsigned char *)p + n - span(n);
	for (size_t i = 0; i < span(n) - n; i++) if (base[i] != 0xa5) return 0;
	return 1;
}
static void release(void *p, size_t n) { unpages((unsigned char *)p + n - span(n), span(n)); }
`

// hostedPages is pages and unpages (guardedBufs) through the C library.
const hostedPages = `
#include <sys/mman.h>
#define PG 4096
static unsigned char *pages(size_t n) {
	unsigned char *p = mmap(0, n + PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p + n, PG, PROT_NONE) != 0) { fprintf(stderr, "mmap failed\n"); exit(2); }
	return p;
}
static void unpages(unsigned char *p, size_t n) { munmap(p, n + PG); }
`

// driverBufs is driverWith with the given tensor buffers (canaryBufs, guardedBufs): they define
// rdbuf, intact and release.
func driverBufs(p *codegen.Package, prelude, bufs string) string {
	var b strings.Builder
	fmt.Fprintf(&b, prelude, p.Name)
	b.WriteString(bufs)
	b.WriteString(`
int main(void) {
	int32_t which;
	while (next(&which)) {
		int32_t st = -1;
		switch (which) {
`)
	for i, kk := range p.Kernels {
		k := kk.K
		fmt.Fprintf(&b, "\t\tcase %d: {\n", i)
		var args []string
		for _, d := range k.Dims {
			fmt.Fprintf(&b, "\t\t\tint64_t %s; rd(&%s, 8);\n", d.Name, d.Name)
			args = append(args, d.Name)
		}
		for _, t := range k.Params {
			ct := cType(t.Type)
			if t.Kind == ir.Scalar {
				fmt.Fprintf(&b, "\t\t\t%s %s; rd(&%s, sizeof %s);\n", ct, t.Name, t.Name, t.Name)
				args = append(args, t.Name)
				continue
			}
			fmt.Fprintf(&b, "\t\t\tint64_t %s_len; %s *%s = rdbuf(&%s_len, sizeof(%s));\n", t.Name, ct, t.Name, t.Name, ct)
			args = append(args, t.Name, t.Name+"_len")
		}
		fmt.Fprintf(&b, "\t\t\tst = %s(%s);\n", FuncName(p.Name, k.Name), strings.Join(args, ", "))
		for _, t := range k.Params {
			if t.Kind != ir.Scalar {
				fmt.Fprintf(&b, "\t\t\tif (!intact(%s, %s_len * sizeof(*%s))) st = 99;\n", t.Name, t.Name, t.Name)
			}
		}
		b.WriteString("\t\t\twr(&st, 4);\n")
		for _, t := range k.Params {
			if t.Kind == ir.Out || t.Kind == ir.InOut {
				fmt.Fprintf(&b, "\t\t\twr(%s, %s_len * sizeof(*%s));\n", t.Name, t.Name, t.Name)
			}
		}
		for _, t := range k.Params {
			if t.Kind != ir.Scalar {
				fmt.Fprintf(&b, "\t\t\trelease(%s, %s_len * sizeof(*%s));\n", t.Name, t.Name, t.Name)
			}
		}
		b.WriteString("\t\t\tbreak;\n\t\t}\n")
	}
	b.WriteString("\t\tdefault:\n\t\t\tunknown(which);\n\t\t}\n\t}\n\tdone();\n\treturn 0;\n}\n")
	return b.String()
}

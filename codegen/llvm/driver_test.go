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
	var b strings.Builder
	fmt.Fprintf(&b, `#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "%s.h"

static void rd(void *p, size_t n) {
	if (n && fread(p, 1, n, stdin) != n) { fprintf(stderr, "short input\n"); exit(2); }
}
static void *rdbuf(int64_t *len, size_t size) {
	rd(len, 8);
	void *p = malloc(*len * size + 1);
	rd(p, *len * size);
	return p;
}
static void wr(const void *p, size_t n) { if (n) fwrite(p, 1, n, stdout); }

int main(void) {
	int32_t which;
	while (fread(&which, 4, 1, stdin) == 1) {
		int32_t st = -1;
		switch (which) {
`, p.Name)
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
		fmt.Fprintf(&b, "\t\t\tst = %s(%s);\n\t\t\twr(&st, 4);\n", FuncName(p.Name, k.Name), strings.Join(args, ", "))
		for _, t := range k.Params {
			if t.Kind == ir.Out || t.Kind == ir.InOut {
				fmt.Fprintf(&b, "\t\t\twr(%s, %s_len * sizeof(*%s));\n", t.Name, t.Name, t.Name)
			}
		}
		for _, t := range k.Params {
			if t.Kind != ir.Scalar {
				fmt.Fprintf(&b, "\t\t\tfree(%s);\n", t.Name)
			}
		}
		b.WriteString("\t\t\tbreak;\n\t\t}\n")
	}
	b.WriteString("\t\tdefault:\n\t\t\tfprintf(stderr, \"unknown kernel %d\\n\", which);\n\t\t\treturn 2;\n\t\t}\n\t}\n\treturn 0;\n}\n")
	return b.String()
}

package msl

import (
	"fmt"
	"strings"
)

// CPPEntries returns the C++ glue that testdata/driver.cpp includes as entries.inc: for each launch a
// function binding the driver's buffers to the kernel function's parameters in [[buffer(i)]] order
// (device buffers as pointers, scalars and the dims struct as references), and the table kg_entries
// that names them. It is what lets emitted MSL run on a CPU under metal_shim.h; a Metal runtime binds
// the same buffers through setBuffer:offset:atIndex: instead.
func CPPEntries(ls []*Launch) string {
	var b strings.Builder
	for _, l := range ls {
		var args []string
		for i, p := range l.Params {
			switch p.Kind {
			case BufferParam:
				t := storageType(p.Tensor.Type).Name
				if !p.Written {
					t = "const " + t
				}
				args = append(args, fmt.Sprintf("a.ptr<device %s>(%d)", t, i))
			case ScalarParam:
				args = append(args, fmt.Sprintf("a.ref<constant const %s>(%d)", storageType(p.Tensor.Type).Name, i))
			case DimsParam:
				args = append(args, fmt.Sprintf("a.ref<constant %s>(%d)", dimsStruct(l.Function), i))
			}
		}
		args = append(args, "tg", "tid")
		fmt.Fprintf(&b, "static void kg_entry_%s(const kg::Args& a, uint3 tg, uint tid) {\n\t%s(%s);\n}\n", l.Function, l.Function, strings.Join(args, ", "))
	}
	b.WriteString("static const kg::EntryName kg_entries[] = {\n")
	for _, l := range ls {
		fmt.Fprintf(&b, "\t{%q, kg_entry_%s},\n", l.Function, l.Function)
	}
	b.WriteString("};\n")
	return b.String()
}

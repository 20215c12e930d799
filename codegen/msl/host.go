package msl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// goElem is the Go type of a kdsl element type in generated code, "" for one a Metal method cannot
// take.
func goElem(d ir.DType) string {
	switch d {
	case ir.F32:
		return "float32"
	case ir.F16:
		return "f16.F16"
	case ir.BF16:
		return "f16.BF16"
	case ir.I32:
		return "int32"
	case ir.I8:
		return "int8"
	}
	return ""
}

// hostKernels returns the kernels of p that get Metal methods (those with launches and Go types for
// every parameter), in package order, and for the others the reason.
func hostKernels(p *codegen.Package, src *Source) ([]*ir.Kernel, map[string]string) {
	launched := map[*ir.Kernel]bool{}
	for _, l := range src.Launches {
		launched[l.Kernel] = true
	}
	var ks []*ir.Kernel
	why := map[string]string{}
	for _, k := range p.Kernels {
		if err := src.Unsupported[k.K.Name]; err != nil {
			why[k.K.Name] = err.Error()
			continue
		}
		if !launched[k.K] {
			why[k.K.Name] = "no Metal launch"
			continue
		}
		ok := true
		for _, t := range k.K.Params {
			if goElem(t.Type) == "" {
				why[k.K.Name] = fmt.Sprintf("parameter %s of type %s has no Metal method type", t.Name, t.Type)
				ok = false
				break
			}
		}
		if ok {
			ks = append(ks, k.K)
		}
	}
	return ks, why
}

// hostNames checks that the exported names metal.go adds collide neither with the package's CPU
// functions (one per kernel, GoName) nor with each other: a generated package must compile.
func hostNames(p *codegen.Package, ks []*ir.Kernel) error {
	owner := map[string]string{}
	for _, n := range []string{"Metal", "OpenMetal", "MetalTensor", "NewMetalTensor", "MetalTensorFrom"} {
		owner[n] = "metal.go's " + n
	}
	for _, k := range p.Kernels {
		n := codegen.GoName(k.K.Name)
		if o, ok := owner[n]; ok {
			return fmt.Errorf("msl: kernel %s: its function %s collides with %s", k.K.Name, n, o)
		}
		owner[n] = "the function of kernel " + k.K.Name
	}
	methods := map[string]string{"Close": "(*Metal).Close", "Device": "(*Metal).Device"}
	for _, k := range ks {
		for _, n := range []string{codegen.GoName(k.Name), codegen.GoName(k.Name) + "Host"} {
			if o, ok := methods[n]; ok {
				return fmt.Errorf("msl: kernel %s: its Metal method %s collides with %s", k.Name, n, o)
			}
			methods[n] = "a Metal method of kernel " + k.Name
		}
	}
	return nil
}

// methodList is the part of Metal's doc comment that lists the methods and the kernels without one.
func methodList(ks []*ir.Kernel, why map[string]string) string {
	var b strings.Builder
	b.WriteString("//\n// Methods, one pair per kernel with a Metal version:\n//\n")
	for _, k := range ks {
		fmt.Fprintf(&b, "//   - %[1]s (device tensors) and %[1]sHost (slices)\n", codegen.GoName(k.Name))
	}
	if len(why) > 0 {
		b.WriteString("//\n// Kernels without a Metal method (their CPU functions remain):\n//\n")
		var names []string
		for n := range why {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "//   - %s: %s\n", codegen.GoName(n), why[n])
		}
	}
	return b.String()
}

// hostMethods writes, for each kernel of ks, its check function and its two methods.
func hostMethods(b *strings.Builder, ks []*ir.Kernel) error {
	for _, k := range ks {
		if err := checkFunc(b, k); err != nil {
			return err
		}
		deviceMethod(b, k)
		hostMethod(b, k)
	}
	return nil
}

// sig returns the method parameters: the CPU function's, with tensors typed by tensorType.
func sig(k *ir.Kernel, tensorType func(elem string) string) string {
	var out []string
	if len(k.Dims) > 0 {
		var ds []string
		for _, d := range k.Dims {
			ds = append(ds, d.Name)
		}
		out = append(out, strings.Join(ds, ", ")+" int")
	}
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			out = append(out, t.Name+" "+goElem(t.Type))
		} else {
			out = append(out, t.Name+" "+tensorType(goElem(t.Type)))
		}
	}
	return strings.Join(out, ", ")
}

// prologue writes the checks shared by both methods: the CPU function's checks on lengths (len is
// how a tensor's length is read), the CPU function's early return when every output is empty, and
// the Metal limits. It leaves `dims_` (map of dims) and `lens_` defined.
func prologue(b *strings.Builder, k *ir.Kernel, length func(name string) string) {
	var args []string
	for _, d := range k.Dims {
		args = append(args, d.Name)
	}
	for _, t := range k.Params {
		if t.Kind != ir.Scalar {
			args = append(args, length(t.Name))
		}
	}
	fmt.Fprintf(b, "\tif err := %sMetalCheck(%s); err != nil {\n\t\treturn err\n\t}\n", k.Name, strings.Join(args, ", "))
	var outs []string
	for _, t := range k.Params {
		if t.Kind == ir.Out || t.Kind == ir.InOut {
			if len(t.Shape) == 0 {
				outs = nil
				break
			}
			outs = append(outs, length(t.Name)+" == 0")
		}
	}
	if len(outs) > 0 {
		fmt.Fprintf(b, "\tif %s {\n\t\treturn nil // nothing to write, as the CPU function\n\t}\n", strings.Join(outs, " && "))
	}
	b.WriteString("\tdims_ := map[string]int{")
	for _, d := range k.Dims {
		fmt.Fprintf(b, "%q: %s, ", d.Name, d.Name)
	}
	b.WriteString("}\n\tlens_ := map[string]int{")
	for _, t := range k.Params {
		if t.Kind != ir.Scalar {
			fmt.Fprintf(b, "%q: %s, ", t.Name, length(t.Name))
		}
	}
	fmt.Fprintf(b, "}\n\tif err := metalLimits(%q, dims_, lens_); err != nil {\n\t\treturn err\n\t}\n", k.Name)
	b.WriteString("\tif m_ == nil || m_.dev == nil {\n\t\treturn errMetalNil\n\t}\n")
}

// scalars writes vals_, the kernel's scalars as Metal bytes.
func scalars(b *strings.Builder, k *ir.Kernel) {
	b.WriteString("\tvals_ := map[string]metal.Bytes{")
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			fmt.Fprintf(b, "%q: metal.Value(%s), ", t.Name, t.Name)
		}
	}
	b.WriteString("}\n")
}

func docHead(b *strings.Builder, k *ir.Kernel, what string) {
	name := codegen.GoName(k.Name)
	on := "device tensors"
	if what == "Host" {
		on = "host slices: upload, run, download"
	}
	fmt.Fprintf(b, "// %s%s runs kernel %s on the GPU (%s) with the parameters,\n", name, what, k.Name, on)
	fmt.Fprintf(b, "// checks and errors of the CPU function %s; nothing is written when an error is returned.\n", name)
	b.WriteString("// Dims and tensor lengths must also stay within 2^31-1.\n")
}

// deviceMethod writes (*Metal).Kernel on *MetalTensor arguments.
func deviceMethod(b *strings.Builder, k *ir.Kernel) {
	docHead(b, k, "")
	fmt.Fprintf(b, "func (m_ *Metal) %s(%s) error {\n", codegen.GoName(k.Name), sig(k, func(e string) string { return "*MetalTensor[" + e + "]" }))
	prologue(b, k, func(n string) string { return n + ".Len()" })
	b.WriteString("\tbufs_ := map[string]*metal.Buffer{")
	for _, t := range k.Params {
		if t.Kind != ir.Scalar {
			fmt.Fprintf(b, "%q: %s.Buffer(), ", t.Name, t.Name)
		}
	}
	b.WriteString("}\n")
	scalars(b, k)
	fmt.Fprintf(b, "\treturn m_.run(%q, dims_, bufs_, vals_)\n}\n\n", k.Name)
}

// hostMethod writes (*Metal).KernelHost on slices: every tensor parameter uploaded (outputs only
// allocated), the launches run, the written ones downloaded.
func hostMethod(b *strings.Builder, k *ir.Kernel) {
	docHead(b, k, "Host")
	fmt.Fprintf(b, "func (m_ *Metal) %sHost(%s) error {\n", codegen.GoName(k.Name), sig(k, func(e string) string { return "[]" + e }))
	prologue(b, k, func(n string) string { return "len(" + n + ")" })
	b.WriteString("\tbufs_ := map[string]*metal.Buffer{}\n\tdefer func() {\n\t\tfor _, b := range bufs_ {\n\t\t\tb.Free()\n\t\t}\n\t}()\n")
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			continue
		}
		fmt.Fprintf(b, "\tif b, err := metalUpload(m_, %s, %v); err != nil {\n\t\treturn fmt.Errorf(\"%s: %s: %%w\", err)\n\t} else {\n\t\tbufs_[%q] = b\n\t}\n",
			t.Name, t.Kind != ir.Out, k.Name, t.Name, t.Name)
	}
	scalars(b, k)
	fmt.Fprintf(b, "\tif err := m_.run(%q, dims_, bufs_, vals_); err != nil {\n\t\treturn err\n\t}\n", k.Name)
	for _, t := range k.Params {
		if t.Kind == ir.Out || t.Kind == ir.InOut {
			fmt.Fprintf(b, "\tif err := metal.Download(%s, bufs_[%q]); err != nil {\n\t\treturn err\n\t}\n", t.Name, t.Name)
		}
	}
	b.WriteString("\treturn nil\n}\n\n")
}

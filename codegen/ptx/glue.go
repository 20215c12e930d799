package ptx

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// goTypes are the Go element types of kdsl types, as the go backend writes them.
var goTypes = map[ir.DType]string{ir.F64: "float64", ir.F32: "float32", ir.F16: "f16.F16", ir.BF16: "f16.BF16",
	ir.I32: "int32", ir.I8: "int8"}

// glueFile writes ptx_cuda.go: OpenCUDA and, per kernel with a PTX version in some module, a method on
// device tensors and a host-slice convenience with the CPU function's parameters and checks. mods are
// the modules goTable describes; a kernel is given methods when at least one module has it (the
// method reports the reason when the loaded module does not).
func glueFile(p *codegen.Package, mods []modInfo) ([]byte, error) {
	have := map[string]bool{}
	for _, m := range mods {
		for _, k := range m.kernels {
			have[k.Name] = true
		}
	}
	var b bytes.Buffer
	b.WriteString(codegen.Header)
	mod := p.KgenModule()
	fmt.Fprintf(&b, "// Source: %s. Go methods that run the PTX kernels on a GPU (kgen's ptx backend).\n\npackage %s\n\n", p.Source, p.Name)
	fmt.Fprintf(&b, "import (\n\"fmt\"\n\"math\"\n\"os\"\n\"strings\"\n\"sync\"\n\"unsafe\"\n\n%q\n%q\n%q\n)\n\n", mod+"/f16", mod+"/rt", mod+"/rt/cuda")
	b.WriteString(strings.ReplaceAll(glueRuntime, "PKG", p.Name))
	for _, k := range p.Kernels {
		if !have[k.K.Name] {
			continue
		}
		if err := glueMethods(&b, k.K); err != nil {
			return nil, fmt.Errorf("ptx: kernel %s: %v", k.K.Name, err)
		}
	}
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("ptx: generated ptx_cuda.go does not format: %v", err)
	}
	return out, nil
}

// glueMethods writes Name (device tensors) and NameHost (host slices) for kernel k. Its own names
// (the receiver c_, err_, X_d, X_h) end in "_", which kdsl names never do.
func glueMethods(b *bytes.Buffer, k *ir.Kernel) error {
	w := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	name := codegen.GoName(k.Name)
	var dimNames []string
	for _, d := range k.Dims {
		dimNames = append(dimNames, d.Name)
	}
	for _, t := range k.Params {
		if _, ok := goTypes[t.Type]; !ok {
			return fmt.Errorf("parameter %s: type %s has no device tensor", t.Name, t.Type)
		}
	}
	sig := func(tensor func(string) string) string {
		var ps []string
		if len(dimNames) > 0 {
			ps = append(ps, strings.Join(dimNames, ", ")+" int")
		}
		for _, t := range k.Params {
			if t.Kind == ir.Scalar {
				ps = append(ps, t.Name+" "+goTypes[t.Type])
			} else {
				ps = append(ps, t.Name+" "+tensor(goTypes[t.Type]))
			}
		}
		return strings.Join(ps, ", ")
	}
	var callArgs []string
	callArgs = append(callArgs, dimNames...)
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			callArgs = append(callArgs, t.Name)
		} else {
			callArgs = append(callArgs, t.Name+"_d")
		}
	}
	bounds, err := boundsChecks(k)
	if err != nil {
		return err
	}
	// checks writes the CPU wrapper's checks with lenOf giving a tensor's length.
	checks := func(lenOf func(string) string) {
		for _, d := range k.Dims {
			w("if uint(%s) > rt.MaxDim {\nreturn rt.DimError(%q, %q, %s)\n}", d.Name, k.Name, d.Name, d.Name)
		}
		for _, t := range k.Params {
			if t.Kind == ir.Scalar {
				continue
			}
			var ds []string
			for _, d := range t.Shape {
				ds = append(ds, d.Name)
			}
			shape, dl := "1", ""
			if len(ds) > 0 {
				shape, dl = strings.Join(ds, "*"), ", "+strings.Join(ds, ", ")
			}
			w("if err_ := rt.CheckLen(%q, %q, %s, %q%s); err_ != nil {\nreturn err_\n}", k.Name, t.Name, lenOf(t.Name), shape, dl)
		}
		for _, l := range bounds {
			w("%s", l)
		}
		var empty []string
		for _, t := range k.Params {
			if t.Kind == ir.Out || t.Kind == ir.InOut {
				if len(t.Shape) == 0 {
					empty = nil
					break
				}
				empty = append(empty, lenOf(t.Name)+" == 0")
			}
		}
		if len(empty) > 0 {
			w("if %s {\nreturn nil // nothing to write\n}", strings.Join(empty, " && "))
		}
	}

	// Device method.
	w("// %s runs kernel %s on the GPU, on device tensors: the parameters, checks and errors of the", name, k.Name)
	w("// CPU function %s; nothing is written when an error is returned before the launch.", name)
	w("func (c_ *CUDA) %s(%s) error {", name, sig(func(t string) string { return "*CUDATensor[" + t + "]" }))
	for _, t := range k.Params {
		if t.Kind != ir.Scalar {
			w("if err_ := ptxOwn(c_, %q, %q, %s); err_ != nil {\nreturn err_\n}", k.Name, t.Name, t.Name)
		}
	}
	checks(func(t string) string { return t + ".Len()" })
	w("return c_.ptxRun(%q, ptxArgs{", k.Name)
	w("dims: map[string]int64{")
	for _, d := range dimNames {
		w("%q: int64(%s),", d, d)
	}
	w("},\ntensors: map[string]cuda.DevicePtr{")
	for _, t := range k.Params {
		if t.Kind != ir.Scalar {
			w("%q: %s.ptr(),", t.Name, t.Name)
		}
	}
	w("},\nscalars: map[string]any{")
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			v := t.Name
			if t.Type == ir.F16 || t.Type == ir.BF16 {
				v = "uint16(" + t.Name + ")" // 16-bit scalars travel as their bits
			}
			w("%q: %s,", t.Name, v)
		}
	}
	w("}})\n}\n")

	// Host convenience.
	w("// %sHost is %s on host slices: it checks them as the CPU function does, copies the inputs to the", name, name)
	w("// device, runs the kernel and copies the outputs back; nothing is written when an error is returned.")
	w("func (c_ *CUDA) %sHost(%s) error {", name, sig(func(t string) string { return "[]" + t }))
	checks(func(t string) string { return "len(" + t + ")" })
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			continue
		}
		if t.Kind == ir.Out {
			w("%s_d, err_ := NewCUDATensor[%s](c_, len(%s))", t.Name, goTypes[t.Type], t.Name)
		} else {
			w("%s_d, err_ := CUDATensorFrom(c_, %s)", t.Name, t.Name)
		}
		w("if err_ != nil {\nreturn fmt.Errorf(\"%s: %s: %%w\", err_)\n}\ndefer %s_d.Free()", k.Name, t.Name, t.Name)
	}
	w("if err_ := c_.%s(%s); err_ != nil {\nreturn err_\n}", name, strings.Join(callArgs, ", "))
	// Download every output into a staging copy first, so that a failed copy writes nothing.
	var outs []*ir.Tensor
	for _, t := range k.Params {
		if t.Kind == ir.Out || t.Kind == ir.InOut {
			outs = append(outs, t)
		}
	}
	if len(outs) == 1 {
		t := outs[0]
		w("return %s_d.Download(%s)", t.Name, t.Name)
	} else {
		for _, t := range outs {
			w("%s_h := make([]%s, len(%s))\nif err_ := %s_d.Download(%s_h); err_ != nil {\nreturn err_\n}", t.Name, goTypes[t.Type], t.Name, t.Name, t.Name)
		}
		for _, t := range outs {
			w("copy(%s, %s_h)", t.Name, t.Name)
		}
		w("return nil")
	}
	w("}\n")
	return nil
}

package tune

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// The driver is a test file the tuner writes into the scratch package it generates: built once with
// go test -c, it runs as one process that answers JSON requests on stdin, one a line, so that every
// candidate of the run-time plan symbols is installed by setting the GEMM slot's fields (through
// reflection: the slot variables are the package's own) instead of by regenerating and rebuilding.
//
//	{"op":"info"}                                   → {"variant": "...", "slots": {"sgemm": {"MR": 14, ...}}}
//	{"op":"use","variant":"go"}                     → {} (Use; then the slots' fields are the new defaults)
//	{"op":"check","kernel":"k","cfg":{"sgemm.KC":8}} → {"err": ""} after comparing with the interpreter
//	{"op":"time","kernel":"k","dims":{...},"a":{...},"b":{...},"pairs":8,"batch_ns":2e7}
//	                                                → {"ta": [...], "tb": [...]} paired batch times, ns/call
//
// Every answer may carry "err". After each request the slots get their defaults back.

// driverSource returns the driver for the kernels of package pkg, whose GEMM slots are slots[kernel].
func driverSource(pkg, mod string, ks []*ir.Kernel, slots map[string][]string, classes bool) ([]byte, error) {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("package %s\n\nimport (\n", pkg)
	for _, imp := range []string{"bufio", "encoding/json", "fmt", "math", "math/rand/v2", "os", "reflect", "strings", "testing", "time",
		mod + "/check", mod + "/f16", mod + "/ir", mod + "/kgentest"} {
		w("\t%q\n", imp)
	}
	w(")\n\nvar _ = f16.FromFloat64\n\n")
	w("var tuneKernels_ = map[string]tuneKernel_{\n")
	for _, k := range ks {
		w("\t%q: {\n\t\tsource: %q,\n\t\tslots: map[string]any{", k.Name, k.Source)
		for _, s := range slots[k.Name] {
			w("%q: %s, ", s, codegen.SlotVar(s))
		}
		w("},\n\t\tcall: func(dims map[string]int, in map[string][]float64, sc map[string]float64) (func() error, func() map[string][]float64) {\n")
		var args []string
		for _, d := range k.Dims {
			args = append(args, fmt.Sprintf("dims[%q]", d.Name))
		}
		var outs []string
		for _, p := range k.Params {
			args = append(args, p.Name)
			n := map[ir.DType]string{ir.F64: "F64", ir.F32: "F32", ir.F16: "F16", ir.BF16: "BF16", ir.I32: "I32", ir.I8: "I8"}[p.Type]
			if n == "" {
				return nil, fmt.Errorf("kernel %s: parameter %s of type %s: the tuner has no conversion", k.Name, p.Name, p.Type)
			}
			if p.Kind == ir.Scalar {
				cv := map[string]string{"F64": "float64", "F32": "float32", "F16": "f16.FromFloat64", "BF16": "f16.BF16FromFloat64", "I32": "int32", "I8": "int8"}[n]
				w("\t\t\t%s := %s(sc[%q])\n", p.Name, cv, p.Name)
				continue
			}
			w("\t\t\t%s := kgentest.To%s(in[%q])\n", p.Name, n, p.Name)
			if p.Kind == ir.Out || p.Kind == ir.InOut {
				outs = append(outs, fmt.Sprintf("%q: kgentest.From%s(%s)", p.Name, n, p.Name))
			}
		}
		w("\t\t\treturn func() error { return %s(%s) },\n", codegen.GoName(k.Name), strings.Join(args, ", "))
		w("\t\t\t\tfunc() map[string][]float64 { return map[string][]float64{%s} }\n\t\t},\n\t},\n", strings.Join(outs, ", "))
	}
	w("}\n\n")
	// useClass_ installs the running variant under a candidate's machine class (kernels.go); the
	// package has the class switches only when the tuner gave it candidates.
	w("const candidateClassFormat_ = %q\n\n", candidateClassFormat)
	if classes {
		w("func useClass_(class string) error {\n\tv := Variant()\n\tmachineClass = class\n\tdefer func() { machineClass = \"\" }()\n\treturn Use(v)\n}\n\n")
	} else {
		w("func useClass_(class string) error { return fmt.Errorf(\"no microkernel candidates in this package (class %%s)\", class) }\n\n")
	}
	b.WriteString(driverBody)
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("tune driver: %v\n%s", err, b.String())
	}
	return src, nil
}

// driverBody is the kernel-independent part of the driver.
const driverBody = `type tuneKernel_ struct {
	source string
	slots  map[string]any // slot name → pointer to the slot variable
	call   func(dims map[string]int, in map[string][]float64, sc map[string]float64) (func() error, func() map[string][]float64)
}

type tuneReq_ struct {
	Op      string
	Variant string
	Kernel  string
	Cfg     map[string]int
	Dims    map[string]int
	A, B    map[string]int
	Pairs   int
	BatchNS float64 ` + "`json:\"batch_ns\"`" + `
}

type tuneCase_ struct {
	dims map[string]int
	args ir.Args
	ref  ir.Args
	mag  map[string][]float64
}

type tuneState_ struct {
	saved  map[string]reflect.Value // slot var name → copy of its defaults
	cases  map[string][]tuneCase_   // kernel → ragged shapes with the interpreter's results
	kernel map[string]*ir.Kernel
	runs   map[string]int // calls per timed batch, by kernel and dims
}

func TestTuneDriver_(t *testing.T) {
	if os.Getenv("KGEN_TUNE_DRIVER") != "1" {
		t.Skip("run by kgen tune")
	}
	st := &tuneState_{cases: map[string][]tuneCase_{}, kernel: map[string]*ir.Kernel{}, runs: map[string]int{}}
	st.save()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<24)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req tuneReq_
		resp := map[string]any{}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			resp["err"] = err.Error()
		} else if err := st.serve(req, resp); err != nil {
			resp["err"] = err.Error()
		}
		st.restore()
		if err := enc.Encode(resp); err != nil {
			t.Fatal(err)
		}
	}
}

func (st *tuneState_) save() {
	st.saved = map[string]reflect.Value{}
	for _, k := range tuneKernels_ {
		for name, p := range k.slots {
			v := reflect.New(reflect.TypeOf(p).Elem()).Elem()
			v.Set(reflect.ValueOf(p).Elem())
			st.saved[name] = v
		}
	}
}

func (st *tuneState_) restore() {
	for _, k := range tuneKernels_ {
		for name, p := range k.slots {
			reflect.ValueOf(p).Elem().Set(st.saved[name])
		}
	}
}

// set installs cfg (slot.Field → value) in the slots of kernel k: first the microkernel candidates
// (slot.Kernel = i: the variant installed again under candidate i's class), then the fields.
func (st *tuneState_) set(k tuneKernel_, cfg map[string]int) error {
	for sym, v := range cfg {
		if slot, ok := strings.CutSuffix(sym, ".Kernel"); ok && v > 0 {
			if err := useClass_(fmt.Sprintf(candidateClassFormat_, slot, v)); err != nil {
				return err
			}
		}
	}
	for sym, v := range cfg {
		if strings.HasSuffix(sym, ".Kernel") {
			continue
		}
		slot, field := sym, ""
		for i := len(sym) - 1; i >= 0; i-- {
			if sym[i] == '.' {
				slot, field = sym[:i], sym[i+1:]
				break
			}
		}
		p, ok := k.slots[slot]
		if !ok {
			return fmt.Errorf("no slot %q", slot)
		}
		f := reflect.ValueOf(p).Elem().FieldByName(field)
		if !f.IsValid() || f.Kind() != reflect.Int {
			return fmt.Errorf("slot %s has no field %q", slot, field)
		}
		f.SetInt(int64(v))
	}
	return nil
}

func (st *tuneState_) serve(req tuneReq_, resp map[string]any) error {
	if req.Op == "use" {
		if err := Use(req.Variant); err != nil {
			return err
		}
		st.save()
		return nil
	}
	if req.Op == "info" {
		resp["variant"] = Variant()
		slots := map[string]map[string]int{}
		for _, k := range tuneKernels_ {
			for name, p := range k.slots {
				fields := map[string]int{}
				v := reflect.ValueOf(p).Elem()
				for i := 0; i < v.NumField(); i++ {
					if v.Field(i).Kind() == reflect.Int {
						fields[v.Type().Field(i).Name] = int(v.Field(i).Int())
					}
				}
				slots[name] = fields
			}
		}
		resp["slots"] = slots
		return nil
	}
	k, ok := tuneKernels_[req.Kernel]
	if !ok {
		return fmt.Errorf("no kernel %q", req.Kernel)
	}
	switch req.Op {
	case "check":
		if err := st.set(k, req.Cfg); err != nil {
			return err
		}
		return st.check(req.Kernel, k)
	case "time":
		ta, tb, err := st.time(req, k)
		resp["ta"], resp["tb"] = ta, tb
		return err
	}
	return fmt.Errorf("unknown op %q", req.Op)
}

// check runs kernel name on ragged shapes (ones, primes, NaN and Inf inputs, K past any K block) with
// the installed configuration and compares with the interpreter as the generated tests do.
func (st *tuneState_) check(name string, k tuneKernel_) (err error) {
	kk, cases, err := st.casesOf(name, k)
	if err != nil {
		return err
	}
	for _, c := range cases {
		in := c.args.Clone()
		run, out := k.call(c.dims, in.Tensors, in.Scalars)
		if err := protect(run); err != nil {
			return fmt.Errorf("dims %v: %v", c.dims, err)
		}
		got := out()
		for _, p := range kk.Params {
			if p.Kind != ir.Out && p.Kind != ir.InOut {
				continue
			}
			if err := kgentest.Compare(kk, c.dims, p, got[p.Name], c.ref.Tensors[p.Name], c.mag[p.Name]); err != nil {
				return fmt.Errorf("dims %v: %v", c.dims, err)
			}
		}
	}
	return nil
}

func protect(run func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return run()
}

func (st *tuneState_) casesOf(name string, k tuneKernel_) (*ir.Kernel, []tuneCase_, error) {
	if cs, ok := st.cases[name]; ok {
		return st.kernel[name], cs, nil
	}
	ks, err := check.File(name+".kdsl", k.source)
	if err != nil {
		return nil, nil, err
	}
	kk := ks[0]
	rng := rand.New(rand.NewPCG(7, uint64(len(k.source))))
	var cs []tuneCase_
	for si, dims := range kgentest.Shapes(kk, rng, 7) {
		args := kgentest.RandomArgs(kk, dims, rng, si)
		ref := args.Clone()
		if err := ir.RunKernel(kk, ir.Storage, ref); err != nil {
			return nil, nil, fmt.Errorf("interpreter on %v: %v", dims, err)
		}
		cs = append(cs, tuneCase_{dims: dims, args: args, ref: ref, mag: kgentest.Magnitude(kk, args)})
	}
	st.kernel[name], st.cases[name] = kk, cs
	return kk, cs, nil
}

// time measures configurations A and B on one shape: a warm-up batch of each, then Pairs pairs of
// batches in alternating order (AB, BA, ...), each batch as many calls as take BatchNS under A (at
// least 3); a batch's figure is its fastest call.
func (st *tuneState_) time(req tuneReq_, k tuneKernel_) (ta, tb []float64, err error) {
	if _, ok := st.kernel[req.Kernel]; !ok {
		if _, _, err := st.casesOf(req.Kernel, k); err != nil {
			return nil, nil, err
		}
	}
	kk := st.kernel[req.Kernel]
	args := kgentest.RandomArgs(kk, req.Dims, rand.New(rand.NewPCG(3, 5)), 0)
	for n := range args.Scalars {
		args.Scalars[n] = 0.5 // bounded outputs over repeated calls (beta·C + ...)
	}
	run, _ := k.call(req.Dims, args.Tensors, args.Scalars)
	batch := func(cfg map[string]int, n int) (float64, error) {
		st.restore()
		if err := st.set(k, cfg); err != nil {
			return 0, err
		}
		// The fastest call of the batch: on a shared machine a call that another process interrupts
		// is slower, never faster, so the minimum is the least disturbed figure.
		best := math.Inf(1)
		for i := 0; i < n; i++ {
			start := time.Now()
			if err := run(); err != nil {
				return 0, err
			}
			best = min(best, float64(time.Since(start).Nanoseconds()))
		}
		return best, nil
	}
	key := fmt.Sprint(req.Kernel, req.Dims)
	n := st.runs[key]
	if n == 0 {
		batch(req.A, 1) // cold: first touch of the data
		t1, err := batch(req.A, 1)
		if err != nil {
			return nil, nil, err
		}
		n = max(3, min(1<<20, int(req.BatchNS/max(t1, 1))))
		st.runs[key] = n
	}
	if _, err := batch(req.A, n); err != nil {
		return nil, nil, err
	}
	if _, err := batch(req.B, n); err != nil {
		return nil, nil, err
	}
	for p := 0; p < req.Pairs; p++ {
		var a, b float64
		if p%2 == 0 {
			if a, err = batch(req.A, n); err == nil {
				b, err = batch(req.B, n)
			}
		} else {
			if b, err = batch(req.B, n); err == nil {
				a, err = batch(req.A, n)
			}
		}
		if err != nil {
			return nil, nil, err
		}
		ta, tb = append(ta, a), append(tb, b)
	}
	return ta, tb, nil
}
`

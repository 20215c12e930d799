package metal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// signatures transcribes, from Apple's headers, the argument and result C types of every message
// the darwin files send, as the Go types that carry them through purego (id and its protocols:
// objc.ID; NSUInteger, its enums (MTLLanguageVersion, MTLResourceOptions, NSStringEncoding,
// MTLCommandBufferStatus) and uint64_t: uint64; NSInteger: int; BOOL: bool; CFTimeInterval: float64;
// const void* and void*: unsafe.Pointer; NSError**: *objc.ID; const char*: string; MTLSize: Size).
// ret "" is void.
var signatures = map[string]struct {
	args []string
	ret  string
}{
	"alloc":                          {nil, "objc.ID"},               // + (instancetype)alloc
	"init":                           {nil, "objc.ID"},               // - (instancetype)init
	"new":                            {nil, "objc.ID"},               // + (instancetype)new
	"release":                        {nil, ""},                      // - (oneway void)release
	"drain":                          {nil, ""},                      // NSAutoreleasePool - (void)drain
	"respondsToSelector:":            {[]string{"objc.SEL"}, "bool"}, // - (BOOL)respondsToSelector:(SEL)aSelector
	"UTF8String":                     {nil, "string"},                // @property (readonly) const char *UTF8String
	"localizedDescription":           {nil, "objc.ID"},               // NSError: NSString *
	"domain":                         {nil, "objc.ID"},               // NSError: NSErrorDomain (NSString *)
	"code":                           {nil, "int"},                   // NSError: NSInteger
	"initWithBytes:length:encoding:": {[]string{"unsafe.Pointer", "uint64", "uint64"}, "objc.ID"},
	// MTLDevice
	"name":                                       {nil, "objc.ID"},
	"maxThreadsPerThreadgroup":                   {nil, "Size"},
	"maxThreadgroupMemoryLength":                 {nil, "uint64"},
	"maxBufferLength":                            {nil, "uint64"},
	"recommendedMaxWorkingSetSize":               {nil, "uint64"}, // uint64_t
	"hasUnifiedMemory":                           {nil, "bool"},
	"newCommandQueue":                            {nil, "objc.ID"},
	"newLibraryWithSource:options:error:":        {[]string{"objc.ID", "objc.ID", "*objc.ID"}, "objc.ID"},
	"newComputePipelineStateWithFunction:error:": {[]string{"objc.ID", "*objc.ID"}, "objc.ID"},
	"newBufferWithLength:options:":               {[]string{"uint64", "uint64"}, "objc.ID"},
	// MTLCompileOptions
	"setLanguageVersion:": {[]string{"uint64"}, ""},
	"setFastMathEnabled:": {[]string{"bool"}, ""},
	// MTLLibrary, MTLComputePipelineState, MTLBuffer
	"newFunctionWithName:":          {[]string{"objc.ID"}, "objc.ID"},
	"maxTotalThreadsPerThreadgroup": {nil, "uint64"},
	"threadExecutionWidth":          {nil, "uint64"},
	"staticThreadgroupMemoryLength": {nil, "uint64"},
	"contents":                      {nil, "unsafe.Pointer"},
	"length":                        {nil, "uint64"},
	// MTLCommandQueue, MTLCommandBuffer, MTLComputeCommandEncoder
	"commandBuffer":                               {nil, "objc.ID"},
	"computeCommandEncoder":                       {nil, "objc.ID"},
	"setComputePipelineState:":                    {[]string{"objc.ID"}, ""},
	"setBuffer:offset:atIndex:":                   {[]string{"objc.ID", "uint64", "uint64"}, ""},
	"setBytes:length:atIndex:":                    {[]string{"unsafe.Pointer", "uint64", "uint64"}, ""},
	"dispatchThreadgroups:threadsPerThreadgroup:": {[]string{"Size", "Size"}, ""},
	"endEncoding":                                 {nil, ""},
	"commit":                                      {nil, ""},
	"waitUntilCompleted":                          {nil, ""},
	"status":                                      {nil, "uint64"},
	"error":                                       {nil, "objc.ID"},
	"GPUStartTime":                                {nil, "float64"},
	"GPUEndTime":                                  {nil, "float64"},
}

// argType is the Go type of a message argument written with its type explicit: a conversion
// (uint64(n), objc.ID(h), unsafe.Pointer(p), Size(s), objc.SEL(s)), a bool literal, or &v of an
// NSError out-parameter; "" for anything else.
func argType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.CallExpr:
		if len(e.Args) == 1 {
			switch f := e.Fun.(type) {
			case *ast.Ident:
				if f.Name == "uint64" || f.Name == "Size" {
					return f.Name
				}
			case *ast.SelectorExpr:
				if x, ok := f.X.(*ast.Ident); ok {
					if t := x.Name + "." + f.Sel.Name; t == "objc.ID" || t == "objc.SEL" || t == "unsafe.Pointer" {
						return t
					}
				}
			}
		}
	case *ast.Ident:
		if e.Name == "true" || e.Name == "false" {
			return "bool"
		}
	case *ast.UnaryExpr:
		if _, ok := e.X.(*ast.Ident); ok && e.Op == token.AND {
			return "*objc.ID"
		}
	}
	return ""
}

// The darwin files compile on any system only as far as the type checker sees: objc messages take
// ...any, so a message sent with the wrong number or types of arguments, or read with the wrong
// result type, would compile and then pass or read garbage on a Mac. This test parses *_darwin.go
// and checks every x.Send(sel, args...) and objc.Send[T](x, sel, args...) against signatures (and
// the argument count against the selector's colons); that every selector is registered once,
// under a Go name derived from it, and used. Arguments must be written with their type explicit
// (argType), so the check needs no type checker for darwin.
func TestMessageSignatures(t *testing.T) {
	files, err := filepath.Glob("*_darwin.go")
	if err != nil || len(files) < 6 {
		t.Fatalf("darwin files: %v %v", files, err)
	}
	fset := token.NewFileSet()
	sels := map[string]string{} // Go name -> selector
	used := map[string]int{}
	var parsed []*ast.File
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Values) != 1 {
				return true
			}
			call, ok := vs.Values[0].(*ast.CallExpr)
			if !ok || !isSel(call.Fun, "objc", "RegisterName") {
				return true
			}
			lit, _ := strconv.Unquote(call.Args[0].(*ast.BasicLit).Value)
			goName := vs.Names[0].Name
			if _, dup := sels[goName]; dup {
				t.Errorf("%s registered twice", goName)
			}
			sels[goName] = lit
			// selName for "name", selSetBufferOffsetAtIndex for "setBuffer:offset:atIndex:".
			want := "sel"
			for _, part := range strings.Split(strings.TrimSuffix(lit, ":"), ":") {
				want += strings.ToUpper(part[:1]) + part[1:]
			}
			if goName != want {
				t.Errorf("%s = RegisterName(%q): want the Go name %s", goName, lit, want)
			}
			return true
		})
	}
	calls := 0
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var selArg ast.Expr
			var rest []ast.Expr
			ret := "objc.ID or void"
			switch {
			case isMethod(call.Fun, "Send") && len(call.Args) >= 1: // x.Send(sel, args...)
				selArg, rest = call.Args[0], call.Args[1:]
			case isGenericSend(call.Fun) && len(call.Args) >= 2: // objc.Send[T](x, sel, args...)
				selArg, rest = call.Args[1], call.Args[2:]
				ret = types.ExprString(call.Fun.(*ast.IndexExpr).Index)
			default:
				return true
			}
			id, ok := selArg.(*ast.Ident)
			if !ok {
				t.Errorf("%s: selector argument is not a sel variable", fset.Position(call.Pos()))
				return true
			}
			lit, ok := sels[id.Name]
			if !ok {
				t.Errorf("%s: %s is not a registered selector", fset.Position(call.Pos()), id.Name)
				return true
			}
			used[id.Name]++
			calls++
			pos := fset.Position(call.Pos())
			if want := strings.Count(lit, ":"); len(rest) != want {
				t.Errorf("%s: %s sent with %d arguments, the selector takes %d", pos, lit, len(rest), want)
				return true
			}
			sig, ok := signatures[lit]
			if !ok {
				t.Errorf("%s: %s has no entry in signatures", pos, lit)
				return true
			}
			for i, a := range rest {
				if got := argType(a); got != sig.args[i] {
					t.Errorf("%s: %s argument %d is %q (%s), the header says %s", pos, lit, i, got, types.ExprString(a), sig.args[i])
				}
			}
			if ret == "objc.ID or void" && sig.ret != "" && sig.ret != "objc.ID" || ret != "objc.ID or void" && ret != sig.ret {
				t.Errorf("%s: %s result read as %s, the header says %q", pos, lit, ret, sig.ret)
			}
			return true
		})
	}
	for goName, lit := range sels {
		if used[goName] == 0 {
			t.Errorf("selector %q (%s) is never sent", lit, goName)
		}
	}
	// Every message goes inside an autorelease pool: a function that sends one either calls
	// withPool or is a helper that only pooled code calls.
	helpers := map[string]bool{"withPool": true, "nsString": true, "goString": true, "nsError": true,
		"respondsTo": true, "readInfo": true, "encode": true}
	for _, f := range parsed {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || helpers[fd.Name.Name] {
				continue
			}
			sends, pooled := false, false
			ast.Inspect(fd, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					sends = sends || isMethod(c.Fun, "Send") || isGenericSend(c.Fun)
					if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "withPool" {
						pooled = true
					}
				}
				return true
			})
			if sends && !pooled {
				t.Errorf("%s: %s sends messages outside withPool", fset.Position(fd.Pos()), fd.Name.Name)
			}
		}
	}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var name string
			switch fn := c.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if helpers[name] && name != "withPool" && !insidePool(f, c) {
				t.Errorf("%s: helper %s called outside withPool", fset.Position(c.Pos()), name)
			}
			return true
		})
	}
	for lit := range signatures {
		found := false
		for _, l := range sels {
			found = found || l == lit
		}
		if !found {
			t.Errorf("signatures lists %q, which the darwin files do not register", lit)
		}
	}
	if calls < 40 {
		t.Errorf("found only %d message sends: the parser missed some", calls)
	}
}

// insidePool reports whether call lies in a function literal passed to withPool, or in a helper.
func insidePool(f *ast.File, call *ast.CallExpr) bool {
	in := false
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			switch n.Name.Name {
			case "nsString", "goString", "nsError", "respondsTo", "readInfo", "encode":
				if n.Pos() <= call.Pos() && call.End() <= n.End() {
					in = true
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "withPool" && n.Pos() <= call.Pos() && call.End() <= n.End() {
				in = true
			}
		}
		return !in
	})
	return in
}

func isSel(e ast.Expr, pkg, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != name {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == pkg
}

func isMethod(e ast.Expr, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	return ok && s.Sel.Name == name && !isSel(e, "objc", name)
}

func isGenericSend(e ast.Expr) bool {
	ix, ok := e.(*ast.IndexExpr)
	return ok && isSel(ix.X, "objc", "Send")
}

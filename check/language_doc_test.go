package check_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/codegen/arm64"
	"github.com/kgen-dev/kgen/codegen/golang"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/parse"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

// docBlock is one ```kdsl block of docs/LANGUAGE.md.
type docBlock struct {
	line int    // of the opening fence
	err  bool   // ```kdsl error: the block must fail to check
	src  string // with the block's indentation removed
}

func languageBlocks(t *testing.T) []docBlock {
	b, err := os.ReadFile("../docs/LANGUAGE.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if fence != "```kdsl" && fence != "```kdsl error" {
			continue
		}
		indent := lines[i][:strings.Index(lines[i], "`")]
		blk := docBlock{line: i + 1, err: fence == "```kdsl error"}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		blk.src = strings.Join(body, "\n") + "\n"
		out = append(out, blk)
	}
	return out
}

var wantErrorComment = regexp.MustCompile(`(?m)^// error: (\d+:\d+): (.*)$`)

// TestLanguageDocExamples checks every ```kdsl block of docs/LANGUAGE.md: a valid block checks, lowers
// for every target, generates a Go package, and its kernels compute on the loop level what the
// algorithm-level interpreter computes, on random shapes; a ```kdsl error block fails with the error
// its `// error: line:col: message` comment gives.
func TestLanguageDocExamples(t *testing.T) {
	blocks := languageBlocks(t)
	if len(blocks) < 7 {
		t.Fatalf("found %d kdsl blocks in docs/LANGUAGE.md", len(blocks))
	}
	kernels := 0
	for _, blk := range blocks {
		name := fmt.Sprintf("LANGUAGE.md:%d", blk.line)
		ks, err := check.File("doc.kdsl", blk.src)
		if blk.err {
			m := wantErrorComment.FindStringSubmatch(blk.src)
			if m == nil {
				t.Errorf("%s: an error block needs a `// error: line:col: message` comment", name)
				continue
			}
			var list parse.ErrorList
			if !errors.As(err, &list) {
				t.Errorf("%s: checks, want the error %s: %s", name, m[1], m[2])
				continue
			}
			e := list[0]
			if got := fmt.Sprintf("%d:%d", e.Pos.Line, e.Pos.Column); got != m[1] || !strings.HasPrefix(e.Msg, m[2]) {
				t.Errorf("%s: got\n%s\nwant %s: %s", name, parse.Format(err, blk.src), m[1], m[2])
			}
			continue
		}
		if err != nil {
			t.Errorf("%s:\n%s", name, parse.Format(err, blk.src))
			continue
		}
		p := &codegen.Package{Name: "doc", Source: "doc.kdsl"}
		// each backend gets the package compiled by its target's pipeline, as kgen gen does
		pkgs := map[string]*codegen.Package{"go": p}
		for _, k := range ks {
			kernels++
			for _, tgt := range []string{"amd64", "arm64"} {
				m, _ := target.Lookup(tgt)
				f, err := passes.Compile(k, m, passes.Options{})
				if err != nil {
					t.Errorf("%s: %s for %s: %v", name, k.Name, tgt, err)
					continue
				}
				if pkgs[tgt] == nil {
					pkgs[tgt] = &codegen.Package{Name: "doc", Source: "doc.kdsl"}
				}
				pkgs[tgt].Kernels = append(pkgs[tgt].Kernels, codegen.Kernel{K: k, F: f})
			}
			m, _ := target.Lookup("go")
			f, err := passes.Compile(k, m, passes.Options{})
			if err != nil {
				t.Errorf("%s: %s: %v", name, k.Name, err)
				continue
			}
			p.Kernels = append(p.Kernels, codegen.Kernel{K: k, F: f})
			rng := rand.New(rand.NewPCG(3, uint64(blk.line)))
			for si, dims := range kgentest.Shapes(k, rng, 3) {
				args := kgentest.RandomArgs(k, dims, rng, si)
				ref, got := args.Clone(), args.Clone()
				if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
					t.Fatalf("%s: %s: %v", name, k.Name, err)
				}
				if err := ir.RunFunc(f, ir.Storage, got, nil); err != nil {
					t.Fatalf("%s: %s: %v", name, k.Name, err)
				}
				mag := kgentest.Magnitude(k, args)
				for _, prm := range k.Params {
					if prm.Kind == ir.Out || prm.Kind == ir.InOut {
						if err := kgentest.Compare(k, dims, prm, got.Tensors[prm.Name], ref.Tensors[prm.Name], mag[prm.Name]); err != nil {
							t.Errorf("%s: %s, dims %v: %v", name, k.Name, dims, err)
						}
					}
				}
			}
		}
		for _, b := range []codegen.Backend{golang.Backend{Tests: true}, amd64.Backend{}, arm64.Backend{}} {
			if pkgs[b.Name()] == nil {
				continue // reported above
			}
			if _, err := b.Generate(pkgs[b.Name()]); err != nil {
				t.Errorf("%s: backend %s: %v", name, b.Name(), err)
			}
		}
	}
	if kernels < 7 {
		t.Errorf("only %d kernels ran", kernels)
	}
}

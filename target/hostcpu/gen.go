//go:build ignore

// gen writes cpuid_amd64.s and cpuid_amd64.go (go generate in this directory): the CPUID instruction as a
// Go function, built with avo. CI regenerates and diffs them (scripts/test.sh).
package main

import (
	"log"
	"os"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	c := build.NewContext()
	c.Package("github.com/kgen-dev/kgen/target/hostcpu")
	c.ConstraintExpr("amd64,!purego")
	c.Function("CPUID")
	c.Attributes(attr.NOSPLIT)
	c.Doc("CPUID executes the CPUID instruction with EAX = leaf and ECX = sub and returns EAX, EBX, ECX, EDX.")
	c.SignatureExpr("func(leaf, sub uint32) (a, b, c, d uint32)")
	c.Load(c.Param("leaf"), reg.EAX)
	c.Load(c.Param("sub"), reg.ECX)
	c.CPUID()
	c.Store(reg.EAX, c.Return("a"))
	c.Store(reg.EBX, c.Return("b"))
	c.Store(reg.ECX, c.Return("c"))
	c.Store(reg.EDX, c.Return("d"))
	c.RET()
	f, err := c.Result()
	if err != nil {
		log.Fatal(err)
	}
	if err := pass.Compile.Execute(f); err != nil {
		log.Fatal(err)
	}
	cfg := printer.Config{Name: "kgen target/hostcpu/gen.go", Pkg: "hostcpu"}
	asm, err := printer.NewGoAsm(cfg).Print(f)
	if err != nil {
		log.Fatal(err)
	}
	stubs, err := printer.NewStubs(cfg).Print(f)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("cpuid_amd64.s", asm, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("cpuid_amd64.go", stubs, 0o644); err != nil {
		log.Fatal(err)
	}
}

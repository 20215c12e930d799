//go:build peers && cgo

package main

import (
	"fmt"

	"github.com/kgen-dev/kgen/bench/internal/run"
	"github.com/kgen-dev/kgen/bench/peers/blis"
	"github.com/kgen-dev/kgen/bench/peers/cblas"
	"github.com/kgen-dev/kgen/bench/peers/openblas"
)

const peersBuilt = true

// openPeer opens peer name in this (child) process; the environment was set
// by the parent.
func openPeer(name, path string, threads int) (run.Lib, error) {
	var (
		l            *cblas.Lib
		kernel, desc string
		err          error
	)
	switch name {
	case "openblas":
		l, kernel, desc, err = openblas.Open(orDefault(path, openblas.DefaultPath), threads)
	case "blis":
		l, kernel, desc, err = blis.Open(orDefault(path, blis.DefaultPath), threads)
	default:
		return run.Lib{}, fmt.Errorf("unknown peer %q", name)
	}
	if err != nil {
		return run.Lib{}, err
	}
	return run.Lib{Name: name, Kernel: kernel, Detail: desc, S: l.Sgemm, D: l.Dgemm, SBatch: l.SgemmBatch}, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

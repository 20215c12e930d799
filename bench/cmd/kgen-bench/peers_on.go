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
// by the parent. info tells the configuration the library runs (OpenBLAS
// core, BLIS arch) and, for BLIS, the configurations it names.
func openPeer(name, path string, threads int) (lib run.Lib, info peerInfo, err error) {
	var (
		l            *cblas.Lib
		kernel, desc string
	)
	switch name {
	case "openblas":
		l, kernel, desc, err = openblas.Open(orDefault(path, openblas.DefaultPath), threads)
	case "blis":
		l, kernel, desc, err = blis.Open(orDefault(path, blis.DefaultPath), threads)
	default:
		return run.Lib{}, info, fmt.Errorf("unknown peer %q", name)
	}
	if err != nil {
		return run.Lib{}, info, err
	}
	switch name {
	case "openblas":
		info.Config, _ = l.String("openblas_get_corename")
	case "blis":
		info.Config, _ = blis.Arch(l)
		info.Archs = blis.Archs(l)
	}
	return run.Lib{Name: name, Kernel: kernel, Detail: desc, S: l.Sgemm, D: l.Dgemm, SBatch: l.SgemmBatch}, info, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

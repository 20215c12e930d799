//go:build !peers || !cgo

package main

import (
	"errors"

	"github.com/kgen-dev/kgen/bench/internal/run"
)

const peersBuilt = false

func openPeer(name, path string, threads int) (run.Lib, peerInfo, error) {
	return run.Lib{}, peerInfo{}, errors.New("kgen-bench was built without -tags peers (and cgo): no OpenBLAS/BLIS")
}

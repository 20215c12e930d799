//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time so far (all threads), or
// -1 if unknown.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

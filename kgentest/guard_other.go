//go:build !unix

package kgentest

func guardBytes(n int) []byte { return make([]byte, n) }
func freeGuarded()            {}

// Guarded returns ordinary memory where guard pages are not available (see guard_unix.go).
func Guarded[T any](n int, atEnd bool) (s []T, release func()) { return make([]T, n), func() {} }

const guardSupported = false

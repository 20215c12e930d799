//go:build !unix

package kgentest

func guardBytes(n int) []byte { return make([]byte, n) }
func freeGuarded()            {}

const guardSupported = false

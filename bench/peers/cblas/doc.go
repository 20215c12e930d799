// Package cblas calls a CBLAS shared library opened with dlopen. It is empty
// unless built with -tags peers and cgo.
package cblas

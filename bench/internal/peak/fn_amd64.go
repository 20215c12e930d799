//go:build !purego

package peak

func fnFor(name string) func(int) {
	switch name {
	case "fmaPeakAVX2F32":
		return fmaPeakAVX2F32
	case "fmaPeakAVX2F64":
		return fmaPeakAVX2F64
	case "fmaPeakAVX512F32":
		return fmaPeakAVX512F32
	case "fmaPeakAVX512F64":
		return fmaPeakAVX512F64
	}
	return nil
}

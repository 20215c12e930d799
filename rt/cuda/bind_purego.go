//go:build (linux || windows) && (amd64 || arm64) && !kgen_nocuda

package cuda

import "github.com/ebitengine/purego"

// supported reports whether this build can load a CUDA driver at all.
const supported = true

// bind resolves every entry point of a in lib and makes each field call it through purego, which
// passes arguments by the platform's C calling convention (System V on linux/amd64, AAPCS64 on
// arm64, Microsoft x64 on windows/amd64). It fails, naming the symbol, if a
// required one is missing; a missing optional one leaves its field nil.
func bind(lib *library, a *api) error {
	for _, s := range a.symbols() {
		p, err := lib.lookup(s.name)
		if err != nil && s.fallback != "" {
			p, err = lib.lookup(s.fallback)
		}
		if err != nil && s.optional {
			continue
		}
		if err != nil {
			return err
		}
		purego.RegisterFunc(s.fn, p)
	}
	return nil
}

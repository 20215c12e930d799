package parse

// GrammarOnly parses src with the participle grammar alone, without the syntax checks that run first,
// so that the fuzzer can check that those checks reject nothing the grammar accepts.
func GrammarOnly(src string) error {
	_, err := parser.ParseString("f.kd", src)
	return err
}

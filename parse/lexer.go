package parse

import "github.com/alecthomas/participle/v2/lexer"

// kdslLexer splits kdsl text into tokens. Comments run from // to the end of the line.
var kdslLexer = lexer.MustSimple([]lexer.SimpleRule{
	{Name: "Comment", Pattern: `//[^\n]*`},
	{Name: "Whitespace", Pattern: `[ \t\r\n]+`},
	{Name: "Float", Pattern: `[0-9]+\.[0-9]*([eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+`},
	{Name: "Int", Pattern: `[0-9]+`},
	{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
	{Name: "Punct", Pattern: `<=|>=|==|!=|\+=|[-+*/(){}\[\],:;<>=]`},
})

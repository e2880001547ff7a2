import pytest
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from hostir_dialect.parsing import LinearMLIRLexer


def _tokens(lexer_class: type[MLIRLexer], text: str) -> list[tuple[MLIRTokenKind, str]]:
    lexer, tokens = lexer_class(Input(text, "t.mlir")), []
    while (token := lexer.lex()).kind != MLIRTokenKind.EOF:
        tokens.append((token.kind, token.text))
    return tokens


@pytest.mark.parametrize(
    "text",
    [
        '"" "plain" "a \\"quoted\\" word" "tab\\tnew\\nline\\\\" "\\41\\ff" @"sym" "x" // "in a comment',
        '"fusion.func"() ({}) {sym_name = "f\\0A"} : () -> ()',
    ],
)
def test_linear_lexer_reads_strings_as_xdsl_does(text):
    assert _tokens(LinearMLIRLexer, text) == _tokens(MLIRLexer, text)


@pytest.mark.parametrize("rest", ["a" * 10_000, "ab\\" * 3000, "x\\4" * 3000, "\\q" + "y" * 5000])
def test_a_string_left_open_fails_at_once(rest):
    """xDSL's own pattern would try 2^n splits of the n characters after the quote."""
    with pytest.raises(ParseError, match="before closing string literal"):
        _tokens(LinearMLIRLexer, f'"{rest}\n"next"')

"""The one place hostir reads parser state that xDSL keeps private.

xDSL's parsers have no public way to look at the next token without consuming it, which
the tensor type's syntax (`r8` is one identifier) and `LocatingParser` (where an op's
text starts) need, nor to look back at the token just consumed, which MLIR's diagnostics
point at (an unknown op's name, the end of the line where a token is missing), nor to skip
text that the caller has already understood (a tensor type parsed before). Everything else
goes through the public parser API, so an xDSL upgrade that changes the parser's internals
breaks this module only.
"""

from __future__ import annotations

from xdsl.parser import GenericParser
from xdsl.utils.lexer import Position, Span, Token
from xdsl.utils.mlir_lexer import MLIRTokenKind


def peek_token(parser: GenericParser) -> Token:
    """The token `parser` is at, not consumed."""
    return parser._current_token  # noqa: SLF001 -- xDSL has no public peek


class TokenHistory(GenericParser):
    """A parser mixin that remembers the token it consumed last (`previous_token`)."""

    previous_token: Token | None = None

    def _consume_token(self, expected_kind=None):
        token = super()._consume_token(expected_kind)
        self.previous_token = token
        return token


def source_text(parser: GenericParser) -> str:
    """The whole text `parser` reads."""
    return parser.lexer.input.content


def resume_at(parser: GenericParser, position: Position) -> None:
    """Go on parsing at `position` of the text, just after a `>` (the end of a type parsed
    before), skipping what lies before it. A `TokenHistory` parser has consumed that `>`."""
    parser._resume_from(position)  # noqa: SLF001 -- xDSL has no public way to skip text
    if isinstance(parser, TokenHistory):
        parser.previous_token = Token(MLIRTokenKind.GREATER, Span(position - 1, position, parser.lexer.input))

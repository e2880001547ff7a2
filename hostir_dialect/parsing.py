"""The one place hostir reads parser state that xDSL keeps private.

xDSL's parsers have no public way to look at the next token without consuming it, which
the tensor type's syntax (`r8` is one identifier) and `LocatingParser` (where an op's
text starts) need, nor to skip text that the caller has already understood (a tensor
type parsed before). Everything else goes through the public parser API, so an xDSL
upgrade that changes the parser's internals breaks only these functions.
"""

from __future__ import annotations

from xdsl.parser import GenericParser
from xdsl.utils.lexer import Position, Token


def peek_token(parser: GenericParser) -> Token:
    """The token `parser` is at, not consumed."""
    return parser._current_token  # noqa: SLF001 -- xDSL has no public peek


def source_text(parser: GenericParser) -> str:
    """The whole text `parser` reads."""
    return parser.lexer.input.content


def resume_at(parser: GenericParser, position: Position) -> None:
    """Go on parsing at `position` of the text, skipping what lies before it."""
    parser._resume_from(position)  # noqa: SLF001 -- xDSL has no public way to skip text

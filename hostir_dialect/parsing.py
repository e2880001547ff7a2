"""The one place hostir reads parser state that xDSL keeps private.

xDSL's parsers have no public way to look at the next token without consuming it, which
the tensor type's syntax (`r8` is one identifier) and `LocatingParser` (where an op's
text starts) need, nor to look back at the token just consumed, which MLIR's diagnostics
point at (an unknown op's name, the end of the line where a token is missing). Everything
else goes through the public parser API, so an xDSL upgrade that changes the parser's
internals breaks this module only.
"""

from __future__ import annotations

from xdsl.parser import GenericParser
from xdsl.utils.lexer import Token


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

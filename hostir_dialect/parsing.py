"""What hostir's parsers need beyond xDSL's parse methods, through xDSL's public parser
API only: `Parser.pos` (where the next token starts), `Parser.lexer` (its input and
position) and `parse_characters`.

xDSL's parser has no public way to look at the next token without consuming it, which the
tensor type's syntax (`r8` is one identifier) needs, nor to look back at the token just
consumed, which MLIR's diagnostics point at (an unknown op's name, the end of the line
where a token is missing), nor to skip text that the caller has already understood (a
tensor type parsed before). Tokens are lexed anew from the parser's input instead
(`next_token`, `previous_token`: the parser's own are private), and text is skipped as
xDSL's own attribute parser skips a dialect symbol's body (`skip_to`). A public
`peek`/`skip_to` on xDSL's `GenericParser` would serve both (docs/architecture.md).

Every token is lexed by `LinearMLIRLexer`, whose string literals cannot make it backtrack.
"""

from __future__ import annotations

import re

from xdsl.parser import GenericParser
from xdsl.utils.lexer import Position, Token
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind


class LinearMLIRLexer(MLIRLexer):
    """xDSL's MLIR lexer, lexing a string literal in time linear in its line. xDSL 0.74's
    pattern nests a repeated run of plain characters in a repeated group, so on a string
    left open the regex engine tries every way to cut the rest of the line into runs
    before it fails: 2^n for n characters, minutes for a 40-character line. Possessive
    runs match the same strings (a run stops only at a quote, a backslash or a line end,
    where the next unit or the closing quote must start) and fail at once; the change
    could go into xDSL as it is (docs/architecture.md)."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')


def token_at(parser: GenericParser, position: Position) -> Token:
    """The token of `parser`'s input that starts at `position` (after any blank or
    comment there)."""
    lexer = LinearMLIRLexer(parser.lexer.input)
    lexer.pos = position
    return lexer.lex()


def next_token(parser: GenericParser) -> Token:
    """The token `parser` is at, not consumed."""
    return token_at(parser, parser.pos)


def previous_token(parser: GenericParser, since: Position = 0) -> Token | None:
    """The last token before the one `parser` is at, lexed from `since` (a token's start
    before it); None if there is none."""
    previous, position = None, since
    while True:
        token = token_at(parser, position)
        if token.kind == MLIRTokenKind.EOF or token.span.start >= parser.pos:
            return previous
        previous, position = token, token.span.end


def source_text(parser: GenericParser) -> str:
    """The whole text `parser` reads."""
    return parser.lexer.input.content


def skip_to(parser: GenericParser, current: str, position: Position) -> None:
    """Consume the token `parser` is at, whose text is `current`, and go on parsing at
    `position`, skipping the text between them. xDSL's parser holds one token: the lexer
    reads the next one from its position when the current one is consumed, as xDSL's
    attribute parser skips the body of a dialect symbol."""
    parser.lexer.pos = position
    parser.parse_characters(current)

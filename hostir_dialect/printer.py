"""hostir's printer: xDSL's, writing each piece of text straight to its stream, and a
tensor type as one piece.

xDSL's `BasePrinter.print_string` writes every piece of text with the `print` builtin
(`print(text, end="", file=stream)`: keyword arguments looked up, two writes). The printer
calls it a few dozen times per op, and it was a quarter of printing a lowered program (0.9
of 3.7 s at 10,000 input ops, 57,000 printed). Here text without a newline is written with
one `stream.write`, and the column kept as xDSL keeps it; text with a newline takes xDSL's
path (indentation, the callbacks that run at a new line), as does a printer without a
stream (xDSL's prints to the standard output of the moment).

A lowered program prints two tensor types per op; xDSL's `print_attribute` asks each five
`isinstance` questions of abstract classes and prints it in four pieces. A tensor type's
text is the same in every format (`type_text`), so it is printed in one.
"""

from __future__ import annotations

from xdsl import printer
from xdsl.ir import Attribute

from .tensor_type import TensorType, type_text


class Printer(printer.Printer):
    def print_attribute(self, attribute: Attribute) -> None:
        if type(attribute) is TensorType:
            self.print_string(type_text(attribute))
            return
        super().print_attribute(attribute)

    def print_string(self, text: str, *, indent: int | None = None) -> None:
        if "\n" in text or self.stream is None:
            super().print_string(text, indent=indent)
            return
        self._current_column += len(text)
        self.stream.write(text)

"""hostir's printer: xDSL's, printing a tensor type in one piece.

A lowered program prints two tensor types per op; xDSL's `print_attribute` asks each five
`isinstance` questions of abstract classes and prints it in four pieces. A tensor type's
text is the same in every format (`type_text`), so it is printed in one.

xDSL's printer writes each piece of text with the `print` builtin, a few dozen pieces per
op; on a text file such as standard output each piece is encoded and buffered on its own.
hostir's tools print into memory and write the text once (`op_text`).
"""

from __future__ import annotations

import io

from xdsl import printer
from xdsl.ir import Attribute, Operation

from .tensor_type import TensorType, type_text


class Printer(printer.Printer):
    def print_attribute(self, attribute: Attribute) -> None:
        if type(attribute) is TensorType:
            self.print_string(type_text(attribute))
            return
        super().print_attribute(attribute)


def op_text(op: Operation, print_debuginfo: bool = False) -> str:
    """`op` printed by hostir's Printer into memory (with every op's location if
    `print_debuginfo`)."""
    text = io.StringIO()
    Printer(stream=text, print_debuginfo=print_debuginfo).print_op(op)
    return text.getvalue()

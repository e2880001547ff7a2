"""What `fusion.func` / `hir.program` and their return ops share.

`FunctionLikeOp` is a symbol with one block whose arguments are the inputs and whose
last op returns the outputs, printed as `func.func` is; `update_function_type()` (xDSL's
name on `func.FuncOp`) resynchronizes the signature after a pass retypes values.
`ReturnLikeOp` is its terminator: tensor operands, `fusion.return %a : T`.
`lookup_function(op, name)` finds a function by name, as `SymbolTable.lookup_symbol`
does, in O(1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar
from weakref import WeakKeyDictionary

from xdsl.dialects.builtin import FunctionType, ModuleOp, StringAttr, SymbolNameConstraint
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation, prop_def, region_def, traits_def, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    CallableOpInterface,
    HasParent,
    IsolatedFromAbove,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from .building import init_flat
from .tensor_type import TensorType


class _Callable(CallableOpInterface):
    @classmethod
    def get_callable_region(cls, op: Operation) -> Region:
        assert isinstance(op, FunctionLikeOp)
        return op.body

    @classmethod
    def get_argument_types(cls, op: Operation) -> tuple[Attribute, ...]:
        assert isinstance(op, FunctionLikeOp)
        return op.function_type.inputs.data

    @classmethod
    def get_result_types(cls, op: Operation) -> tuple[Attribute, ...]:
        assert isinstance(op, FunctionLikeOp)
        return op.function_type.outputs.data


class ReturnLikeOp(IRDLOperation):
    """The terminator of a FunctionLikeOp: `<name> %a, %b : T, U`."""

    values = var_operand_def(TensorType)
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        init_flat(self, values)


class FunctionLikeOp(IRDLOperation):
    """A symbol at the top level of a module, with one block whose arguments are the
    inputs, ended by its return op (named RETURN_OP; the return op names this op as its
    parent)."""

    body = region_def("single_block")
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove(), _Callable(), HasParent(ModuleOp))
    RETURN_OP: ClassVar[str]

    def __init__(self, name: str, inputs: Sequence[Attribute], outputs: Sequence[Attribute], body: Region | None = None):
        function_type = FunctionType.from_lists(inputs, outputs)
        if body is None:
            body = Region(Block(arg_types=inputs))
        init_flat(self, properties={"sym_name": StringAttr(name), "function_type": function_type}, regions=[body])

    @property
    def args(self):
        return self.body.block.args

    def update_function_type(self) -> None:
        """Make `function_type` match the entry block's arguments and the returned values
        (after a pass changed their types)."""
        block = self.body.block
        terminator = block.last_op
        assert terminator is not None
        new = FunctionType.from_lists(block.arg_types, [v.type for v in terminator.operands])
        if new != self.function_type:
            self.properties["function_type"] = new

    def verify_(self) -> None:
        block = self.body.block
        if tuple(block.arg_types) != self.function_type.inputs.data:
            raise VerifyException("entry block arguments do not match the function's input types")
        last = block.last_op
        if not isinstance(last, ReturnLikeOp) or last.name != self.RETURN_OP:
            raise VerifyException(f"body must end with {self.RETURN_OP}")
        returned = tuple(v.type for v in last.operands)
        if returned != self.function_type.outputs.data:
            raise VerifyException(
                f"returned types ({', '.join(map(str, returned))}) do not match the "
                f"declared results ({', '.join(map(str, self.function_type.outputs.data))})"
            )

    @classmethod
    def parse(cls, parser: Parser):
        name, inputs, outputs, region, extra, _, _ = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type")
        )
        op = cls(name, inputs, outputs, region)
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        print_func_op_like(
            printer, self.sym_name, self.function_type, self.body, self.attributes,
            reserved_attr_names=("sym_name", "function_type"),
        )


_SYMBOL_TABLES: WeakKeyDictionary[Operation, dict[str, Operation]] = WeakKeyDictionary()
"""Symbol-table op -> its symbols by name, as last seen (see lookup_function)."""


def lookup_function(op: Operation, name: str) -> Operation | None:
    """The symbol named `name` in the symbol table around `op` (its module).

    xDSL's `SymbolTable.lookup_symbol` walks the module at every call, so verifying a
    program that posts to N kernel units took O(N^2). The table is kept per module and
    trusted only while it is right: a symbol found must still be in the module under
    that name, and a name not found makes the table be read again."""
    table_op = op
    while not table_op.has_trait(SymbolTable):
        parent = table_op.parent_op()
        if parent is None:
            return None
        table_op = parent
    table = _SYMBOL_TABLES.get(table_op, {})
    found = table.get(name)
    if found is None or found.parent_op() is not table_op or _symbol_name(found) != name:
        table = {}
        for candidate in table_op.regions[0].block.ops:
            symbol = _symbol_name(candidate)
            if symbol is not None:
                table.setdefault(symbol, candidate)
        _SYMBOL_TABLES[table_op] = table
        found = table.get(name)
    return found


def _symbol_name(op: Operation) -> str | None:
    name = op.get_attr_or_prop("sym_name")
    return name.data if isinstance(name, StringAttr) else None

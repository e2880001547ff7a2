"""op_definition: an op's definition is checked in full once per signature; its traits and
its own checks run on every op, and a signature that failed is checked again. The ops of
xDSL's dialects keep xDSL's checks. Assembly formats are compiled on first use, and every
one of them compiles."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseArrayBase, IndexType, IntegerAttr, StringAttr, f32, i32
from xdsl.ir import Block, Data
from xdsl.irdl import IRDLOperation, OpDef, ParsePropInAttrDict, irdl_attr_definition, opt_prop_def
from xdsl.irdl.declarative_assembly_format import FormatProgram
from xdsl.utils.exceptions import ParseError, VerifyException

from hostir_dialect import fusion, hir
from hostir_dialect.context import parse_module
from hostir_dialect.definition import SignatureCheckedOpDef, check_formats, op_definition, signature
from hostir_dialect.diagnostics import HostIRError
from hostir_dialect.sharding import is_resharding
from hostir_dialect.tensor_type import TensorType

T = "!fusion.tensor<f32[4, 8]>"
ROW = "!fusion.tensor<f32[8]>"


def program(body: str, name: str = "p") -> str:
    return (f"hir.program @{name}(%t: {T}) -> () {{\n  %c0 = arith.constant 0 : index\n{body}\n"
            "  hir.return\n}\n")


def test_ops_of_one_signature_share_the_definition_check_not_the_checks_of_their_place():
    select = f"  %v = hir.alias_select %t[%c0] axis 0 : {T} -> {ROW}"
    parse_module(program(select))  # the signature passes in a program
    into = f"  %d = hir.allocate : {T}\n  %s = fusion.neg %t into %d : {T} -> {T}"
    parse_module(program(into))
    in_kernel = f"fusion.func @k(%t: {T}, %d: {T}) -> ({T}) {{\n  %s = fusion.neg %t into %d : {T} -> {T}\n  fusion.return %s : {T}\n}}"
    with pytest.raises(HostIRError, match="destination operands"):  # the op's own check
        parse_module(in_kernel)
    in_func = f"fusion.func @k(%t: {T}) -> () {{\n  %c0 = arith.constant 0 : index\n{select}\n  fusion.return\n}}"
    with pytest.raises(HostIRError, match="not allowed in a fusion.func"):  # a trait
        parse_module(in_func)


def test_hostir_ops_check_their_definition_once_per_signature_xdsl_ops_every_time(monkeypatch):
    full_checks = []
    full_check = OpDef.verify
    monkeypatch.setattr(OpDef, "verify", lambda op_def, op: (full_checks.append(op.name), full_check(op_def, op)))
    body = "\n".join(f"  %k{i} = arith.constant 918273 : i64\n  %v{i} = hir.alias_select %t[%c0] axis 0 : {T} -> {ROW}"
                     for i in range(3))
    parse_module(program(body, name="three"))
    assert full_checks.count("hir.alias_select") <= 1  # none when an earlier test met its signature
    assert full_checks.count("arith.constant") == 4  # xDSL's ops as xDSL checks them
    assert isinstance(hir.AliasSelectOp.get_irdl_definition(), SignatureCheckedOpDef)
    assert type(arith.ConstantOp.get_irdl_definition()) is OpDef and type(scf.ForOp.get_irdl_definition()) is OpDef
    with pytest.raises(HostIRError, match="expects parent op|must be the last operation"):  # traits
        parse_module(program("  scf.yield"))


def test_a_signature_that_failed_is_checked_again():
    index = arith.ConstantOp(IntegerAttr(0, IndexType()))
    tensor = Block(arg_types=[parse_type(T)]).args[0]
    wrong_index = arith.ConstantOp(IntegerAttr(0, i32))
    for _ in range(2):
        bad = hir.AliasSelectOp(tensor, wrong_index.result, 0, parse_type(ROW))
        with pytest.raises(VerifyException, match="index"):
            bad.verify()
    good = hir.AliasSelectOp(tensor, index.result, 0, parse_type(ROW))
    good.verify()
    assert signature(good) != signature(bad)


def test_the_signature_of_an_op_with_regions_holds_their_blocks_and_entry_arguments():
    loop = "  %c1 = arith.constant 1 : index\n  scf.for %i = %c0 to %c1 step %c1 {\n  }"
    first, second = (parse_module(program(loop)).ops.first.body.block.last_op.prev_op for _ in range(2))
    assert isinstance(first, scf.ForOp) and signature(first) == signature(second)
    first.body.block.insert_arg(IndexType(), 1)
    assert signature(first) != signature(second)
    first.body.add_block(Block())
    assert signature(first) != signature(second)
    with pytest.raises(VerifyException, match="expected a single block"):  # a signature that passed, changed
        first.verify()


def parse_type(text: str) -> TensorType:
    module = parse_module(program(f"  %b = hir.allocate : {text}"))
    return module.ops.first.body.block.ops.first.next_op.result.type


def test_the_flat_builder_builds_what_the_irdl_builder_builds():
    """The parser's `build` of an op without regions, successors or segment sizes hands
    operands and result types to Operation.__init__ in order; optional and variadic
    operands, absent optional properties and other attributes land where IRDL puts them."""
    module = parse_module(program(
        f"  %d = hir.allocate : {T}\n"
        f"  %n = hir.allocate symmetric : !fusion.tensor<f32[4, 8], mesh=[0, 1]>\n"
        f"  %s = fusion.neg %t into %d {{note = 1 : i64}} : {T} -> {T}\n"
        f"  %u = fusion.neg %t : {T} -> {T}"))
    allocate, symmetric, into, plain = list(module.ops.first.body.block.ops)[1:5]
    assert not allocate.is_symmetric and symmetric.is_symmetric and not allocate.extents
    assert into.out is allocate.result and into.input is module.ops.first.body.block.args[0]
    assert into.attributes["note"] == IntegerAttr(1, 64) and plain.out is None
    tensor = into.input
    built = fusion.NegOp.build(operands=[tensor, []], result_types=[tensor.type])
    irdl = fusion.NegOp.build(operands=[arith.ConstantOp(IntegerAttr(0, IndexType())), []], result_types=[tensor.type])
    assert list(built.operands) == [tensor] and built.out is None
    assert len(irdl.operands) == 1  # an op standing for its result takes xDSL's builder


@irdl_attr_definition
class _ListData(Data[list]):
    """An attribute that cannot be hashed (its parameter is a list)."""

    name = "test.list"

    @classmethod
    def parse_parameter(cls, parser):
        raise NotImplementedError

    def print_parameter(self, printer) -> None:
        printer.print_string(str(self.data))


def test_an_op_with_an_attribute_that_cannot_be_hashed_is_checked_every_time():
    module = parse_module(program(f"  %d = hir.allocate : {T}\n  %s = fusion.neg %t into %d : {T} -> {T}"))
    allocate, neg = list(module.ops.first.body.block.ops)[1:3]
    for op in (allocate, neg):
        op.attributes["list"] = _ListData([1])
        assert signature(op) is not None
        op.verify()
        op.verify()
    assert not is_resharding(neg)


def test_every_assembly_format_of_hostir_compiles():
    ops = [op for dialect in (fusion.Fusion, hir.HIR) for op in dialect.operations]
    formatted = [op for op in ops if op.assembly_format is not None]
    assert len(formatted) > 40
    check_formats(formatted)
    assert all(isinstance(op.format_program(), FormatProgram) for op in formatted)


def test_a_format_is_compiled_on_first_use_and_a_bad_one_is_refused_by_check_formats():
    @op_definition
    class Bad(IRDLOperation):
        name = "test.bad_format"
        assembly_format = "$missing attr-dict"

    with pytest.raises(ParseError, match="expected variable to refer to an operand"):
        check_formats([Bad])


def test_dense_arrays_print_as_xdsl_prints_them_whatever_their_element_type():
    op = hir.TeamPositionOp([0, 1])
    assert str(op) == "%0 = hir.team_position team [0, 1]"
    op.properties["team"] = DenseArrayBase.from_list(f32, [0.5, 1.5])  # unverified
    assert str(op) == "%0 = hir.team_position team [5.000000e-01, 1.500000e+00]"


def test_attr_dict_prints_attributes_and_its_properties_and_nothing_without_them():
    @op_definition
    class Tagged(IRDLOperation):
        name = "test.tagged"
        tag = opt_prop_def(StringAttr)
        irdl_options = (ParsePropInAttrDict(),)
        assembly_format = "attr-dict"

    assert str(Tagged.create()) == "test.tagged"
    assert str(Tagged.create(properties={"tag": StringAttr("x")})) == 'test.tagged {tag = "x"}'
    assert str(Tagged.create(attributes={"a": StringAttr("y")})) == 'test.tagged {a = "y"}'

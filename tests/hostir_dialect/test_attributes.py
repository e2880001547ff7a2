from xdsl.dialects.builtin import IntegerAttr

from hostir_dialect.attributes import i64_attr


def test_i64_attr_is_the_integer_attribute_built_once():
    for value in (0, 3, -1, 2**63 - 1):
        assert i64_attr(value) == IntegerAttr(value, 64)
        assert i64_attr(value) is i64_attr(value)

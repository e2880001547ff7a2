"""hostir's IR (the `fusion` and `hir` dialects, the tensor type) and its Python frontend.

    from hostir_dialect import FusionDefinition, DeviceMesh, ParallelType, DataType
"""

from .context import make_context, parse_module
from .tensor_type import DYNAMIC, Axis, IterKind, Mesh, ParallelKind, Piece, TensorType, tensor_type

_FRONTEND = frozenset(
    ("DataType", "DeviceMesh", "FusionDefinition", "FusionDefinitionError", "IterDomain", "ParallelType", "Scalar", "Tensor")
)
"""The frontend's names, imported when first asked for: hostir-opt, which imports this
package for its dialects, never builds a fusion in Python (15 ms of its start-up)."""


def __getattr__(name: str):
    if name in _FRONTEND:
        from . import frontend

        return getattr(frontend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "DYNAMIC",
    "Axis",
    "DataType",
    "DeviceMesh",
    "FusionDefinition",
    "FusionDefinitionError",
    "IterDomain",
    "IterKind",
    "Mesh",
    "ParallelKind",
    "ParallelType",
    "Piece",
    "Scalar",
    "Tensor",
    "TensorType",
    "make_context",
    "parse_module",
    "tensor_type",
]

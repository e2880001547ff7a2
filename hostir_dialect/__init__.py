"""hostir's IR (the `fusion` and `hir` dialects, the tensor type) and its Python frontend.

    from hostir_dialect import FusionDefinition, DeviceMesh, ParallelType, DataType
"""

from .context import make_context, parse_module
from .frontend import (
    DataType,
    DeviceMesh,
    FusionDefinition,
    FusionDefinitionError,
    IterDomain,
    ParallelType,
    Scalar,
    Tensor,
)
from .tensor_type import DYNAMIC, Axis, IterKind, Mesh, ParallelKind, Piece, TensorType, tensor_type

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

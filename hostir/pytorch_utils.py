"""nvFuser's `nvfuser_direct.pytorch_utils`: torch dtypes as nvFuser's DataTypes."""

from __future__ import annotations

import torch

from hostir_dialect import DataType
from hostir_dialect.frontend import data_type


def torch_dtype_to_nvfuser_dtype(dtype: torch.dtype) -> DataType:
    """The DataType of a torch dtype (torch.bfloat16 -> DataType.BFloat16)."""
    return data_type(dtype)

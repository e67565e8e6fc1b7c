"""``TensorLike``: numbers and nested lists accepted wherever an op takes a tensor.

A plain number or nested list becomes a constant in the builder of the other inputs. For the
operators that promote mixed dtypes (Add, Sub, Mul, Div, RealDiv, Maximum, Minimum, the
comparisons, and ``+ - * /`` on tensors) GE's ``tensor_like`` rule makes it: ints become
DT_INT64 and any float makes DT_FLOAT, and GE's promotion decides the result (``x + 1`` stays
float for a float ``x``; an int32 ``i * 2`` gives int64). For other operators the constant takes
the dtype the op's other inputs of the same type already have (``Pow(x, 2)`` for a float ``x``),
and GE's rule where there is nothing to follow.
"""

from typing import List, Union

Number = Union[int, float]
TensorLike = Union[Number, List["TensorLike"]]

__all__ = ["Number", "TensorLike"]

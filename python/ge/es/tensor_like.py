"""``TensorLike``: numbers and nested lists accepted wherever an op takes a tensor.

A plain number or nested list becomes a constant in the builder of the other inputs. For the
operators that promote mixed dtypes (Add, Sub, Mul, Div, RealDiv, Maximum, Minimum, the
comparisons, and ``+ - * /`` on tensors) GE's ``tensor_like`` rule makes it: ints become
DT_INT64 and any float makes DT_FLOAT, and GE's promotion decides the result (``x + 1`` stays
float for a float ``x``; an int32 ``i * 2`` gives int64). For other operators the constant takes
the dtype the op's other inputs of the same type already have (``Pow(x, 2)`` for a float ``x``),
and GE's rule where there is nothing to follow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Tuple, Union

if TYPE_CHECKING:
    from ge.es.graph_builder import GraphBuilder
    from ge._native import TensorHolder

Number = Union[int, float]
TensorLike = Union[Number, List["TensorLike"]]

__all__ = ["Number", "TensorLike", "convert_to_tensor_holder", "resolve_builder"]


def convert_to_tensor_holder(value: Optional[Union["TensorHolder", TensorLike]],
                             owner_builder: "GraphBuilder") -> Optional["TensorHolder"]:
    """GE's conversion of an operand: ``None`` and a ``TensorHolder`` come back as they are, an
    int becomes a DT_INT64 scalar, a float a DT_FLOAT scalar, a nested list a constant of its
    shape (DT_FLOAT when any item is a float, else DT_INT64), made in ``owner_builder``.
    Anything else is GE's ``TypeError``."""
    from ge._native import TensorHolder

    if value is None or isinstance(value, TensorHolder):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float):
            return owner_builder.create_scalar_float(value)
        return owner_builder.create_scalar_int64(value)
    if isinstance(value, list):
        flat, shape = _flatten_and_infer_shape(value)
        if any(isinstance(v, float) for v in flat):
            return owner_builder.create_const_float(flat, shape=shape)
        return owner_builder.create_const_int64(flat, shape=shape)
    raise TypeError("Value must be TensorHolder or int|float or nested lists of int|float or None")


def resolve_builder(*values: Union[TensorLike, "TensorHolder", "GraphBuilder"]) -> "GraphBuilder":
    """The builder an operation's operands belong to: the first ``GraphBuilder`` or the owner of
    the first ``TensorHolder`` among ``values``; GE's ``ValueError`` when there is none."""
    if not values:
        raise ValueError("At least one argument is required to resolve GraphBuilder")
    from ge._native import GraphBuilderBase, TensorHolder

    for value in values:
        if isinstance(value, GraphBuilderBase):
            return value  # type: ignore[return-value]
        if isinstance(value, TensorHolder):
            return value.get_owner_builder()  # type: ignore[return-value]
    raise ValueError("Please ensure at least one input tensor or an explicit owner_builder is provided "
                     "when supported")


def _flatten_and_infer_shape(value: List[TensorLike]) -> Tuple[List[Number], List[int]]:
    """The flat items of a nested list of numbers and its shape (``[]`` has shape ``[0]``);
    ``TypeError`` for an item that is neither, ``ValueError`` for ragged nesting."""
    if not value:
        return [], [0]

    def walk(item: TensorLike) -> Tuple[List[Number], List[int]]:
        if isinstance(item, (int, float)):
            return [item], []
        if not isinstance(item, list) or not item:
            raise TypeError("Value must be int|float or nested lists of int|float")
        parts = [walk(x) for x in item]
        inner = parts[0][1]
        if any(shape != inner for _, shape in parts):
            raise ValueError("Irregular nested list: all sub-lists must have the same shape")
        return [v for flat, _ in parts for v in flat], [len(item)] + inner

    return walk(value)


def _unflatten(value: List[Number], shape: List[int]) -> List[TensorLike]:
    """Nested lists of ``shape`` from flat items (row-major); ``ValueError`` for an empty shape
    or an item count that is not the shape's size."""
    if not shape:
        raise ValueError("Shape cannot be empty")
    size = 1
    for d in shape:
        size *= d
    if len(value) != size:
        raise ValueError(f"Length of list {len(value)} does not match shape {size}")

    def build(flat: List[Number], dims: List[int]) -> List[TensorLike]:
        if len(dims) == 1:
            return list(flat)
        step = len(flat) // dims[0] if dims[0] else 0
        return [build(flat[i * step:(i + 1) * step], dims[1:]) for i in range(dims[0])]

    return build(list(value), list(shape))

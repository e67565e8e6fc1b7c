"""A Python custom operator with GE's API: the prototype and infer-meta function
(``register_op``) and a HOST implementation (``register_op_impl`` with ``execute``) that adds
through the tensors' addresses with ctypes, as a GE kernel would through device pointers.

Loaded by ``ge_initialize`` because ``ASCEND_CUSTOM_OPP_PATH`` names this folder."""

import ctypes

from ge.custom_op import EagerExecuteOp, get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="PyAddCustom")
def py_add_custom(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    """z = x + alpha * y (float32, same shapes)."""
    if x.data_type != DataType.DT_FLOAT or y.data_type != DataType.DT_FLOAT:
        raise TypeError("PyAddCustom takes float32 tensors")
    if x.shape.origin_shape.dims != y.shape.origin_shape.dims:
        raise ValueError("PyAddCustom takes two tensors of one shape")
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="PyAddCustom")
class PyAddCustom(EagerExecuteOp):
    def execute(self, x: Tensor, y: Tensor, *, alpha: float) -> None:
        ctx = get_execute_ctx()
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        n = x.shape_size
        xs = (ctypes.c_float * n).from_address(x.addr)
        ys = (ctypes.c_float * n).from_address(y.addr)
        zs = (ctypes.c_float * n).from_address(z.addr)
        for i in range(n):
            zs[i] = xs[i] + alpha * ys[i]
        print(f"[PyAddCustom] execute: {n} elements, alpha={alpha}")

"""``ge.custom_op``: Python custom operators with GE's API.

``@register_op(op_type=...)`` on an infer-meta function defines an operator's prototype from
its annotations; ``@register_op_impl(op_type=...)`` on a class gives its implementation:
``execute`` (run on this CPU backend as a HOST kernel, at run time and when constant folding)
and/or ``declare_launch_args`` (device kernel launches: recorded, and reported as needing an
NPU when run). Plugins listed in ``ASCEND_CUSTOM_OPP_PATH`` are imported at ``ge_initialize``
and session creation.
"""

from . import _library as _library  # noqa: F401  (hooks the registries into the library)
from ._native import (AnnotatedArgsContext, AnnotatedKernelArgs, AnnotatedKernelLaunchInfo,
                      WorkspaceAddr)
from .base import BaseCustomOp, EagerExecuteOp, EagerOpExecutionContext
from .context import get_declare_launch_args_ctx, get_execute_ctx
from .proto import register_op
from .registry import (clear_registered_op_impls, get_registered_op_impl_by_descriptor_key,
                       get_registered_op_impl_dicts, get_registered_op_impls, register_op_impl)

__all__ = [
    "BaseCustomOp",
    "AnnotatedArgsContext",
    "AnnotatedKernelArgs",
    "AnnotatedKernelLaunchInfo",
    "EagerExecuteOp",
    "EagerOpExecutionContext",
    "WorkspaceAddr",
    "clear_registered_op_impls",
    "get_declare_launch_args_ctx",
    "get_execute_ctx",
    "get_registered_op_impl_by_descriptor_key",
    "get_registered_op_impl_dicts",
    "get_registered_op_impls",
    "register_op",
    "register_op_impl",
]

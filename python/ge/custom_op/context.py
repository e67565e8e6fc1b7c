"""``get_execute_ctx()`` / ``get_declare_launch_args_ctx()``: the context of the callback that
is running, bound for its duration only (a context variable, so nested calls restore)."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, List, Optional

# Each binding is a one-element list: emptied when its scope ends, so a copied context that
# outlives the callback sees no context.
_EXECUTE: ContextVar[Optional[List[Any]]] = ContextVar("ge_custom_op_execute_ctx", default=None)
_DECLARE: ContextVar[Optional[List[Any]]] = ContextVar("ge_custom_op_declare_ctx", default=None)


def _current(var: ContextVar, message: str) -> Any:
    binding = var.get()
    if not binding:
        raise RuntimeError(message)
    return binding[0]


@contextmanager
def _scope(var: ContextVar, ctx: Any) -> Iterator[None]:
    binding = [ctx]
    token = var.set(binding)
    try:
        yield
    finally:
        binding.clear()
        var.reset(token)


def get_execute_ctx() -> Any:
    """The ``EagerOpExecutionContext`` of the schema-bound ``execute`` that is running."""
    return _current(_EXECUTE, "get_execute_ctx() is only available inside schema-bound execute")


def get_declare_launch_args_ctx() -> Any:
    """The ``AnnotatedArgsContext`` of the ``declare_launch_args`` that is running."""
    return _current(_DECLARE, "get_declare_launch_args_ctx() is only available inside "
                              "declare_launch_args")


def _execute_ctx_scope(ctx: Any) -> Any:
    return _scope(_EXECUTE, ctx)


def _declare_launch_args_ctx_scope(ctx: Any) -> Any:
    return _scope(_DECLARE, ctx)

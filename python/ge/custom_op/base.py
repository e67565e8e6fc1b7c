"""Base classes of Python custom operators."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ._native import EagerOpExecutionContext

__all__ = ["BaseCustomOp", "EagerExecuteOp", "EagerOpExecutionContext"]


class BaseCustomOp(ABC):
    """Base class of Python custom operators."""


class EagerExecuteOp(BaseCustomOp):
    """Base class of custom operators with an eager ``execute``: either ``execute(self, ctx)``
    or schema-bound ``execute(self, *inputs, **attrs)`` with ``get_execute_ctx()``."""

    @abstractmethod
    def execute(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError

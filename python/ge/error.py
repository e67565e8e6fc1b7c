"""``ge.error``: GE's exception for failed API calls, ``GeError``, and ``raise_ge_error``.

``GeError`` is a ``RuntimeError`` with three attributes besides its message: ``error_message``
(what went wrong, without the call's name), ``api_name`` (the call that failed: ``"AddGraph"``,
``"RunGraph"``, ``"GEInitialize"``, ...) and ``context`` (a dict, e.g. ``{"graph_id": 1}``). A
failed call's message reads ``"<api> failed; k=v, ...; <error_message>"``, as in GE.

In ge-rs this class is also the root of the ``ge.GeError`` tree: ``ge.GeError`` *is*
``ge.error.GeError``, and ``GraphBuildError``, ``ShapeInferenceError``, ``ExecutionError``,
``DeviceError``, ... derive from it, so ``except ge.error.GeError`` catches every ge-rs failure
(the native extension takes its base class from this module). Errors raised outside an API call
(building a graph, for instance) leave ``api_name`` None and ``context`` empty.

``get_ge_error_msg()`` returns the error message of this thread's latest failed ge-rs API call
and forgets it (empty when there is none); ``raise_ge_error(api_name, status=None, **context)``
raises a ``GeError`` built from it, as GE's does from GE's error manager.

This module imports nothing from the native extension: the extension imports it.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, NoReturn, Optional

__all__ = ["GeError", "get_ge_error_msg", "raise_ge_error"]


class GeError(RuntimeError):
    """A failed GE call (and, in ge-rs, the base class of every ge-rs error)."""

    error_message: Optional[str] = None
    api_name: Optional[str] = None

    def __init__(
        self,
        message: str = "",
        error_message: Optional[str] = None,
        api_name: Optional[str] = None,
        context: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.error_message = error_message
        self.api_name = api_name
        self.context = context or {}


_last = threading.local()


def _set_error_msg(message: str) -> None:
    """Records the message of a failed call for ``get_ge_error_msg`` (this thread only)."""
    _last.message = message


def get_ge_error_msg() -> str:
    """The error message of this thread's latest failed ge-rs API call, once ("" when none)."""
    message = getattr(_last, "message", "")
    _last.message = ""
    return message


def _failure_text(api_name: str, error_message: str, context: Dict[str, Any]) -> str:
    parts = [f"{api_name} failed"]
    context_text = ", ".join(f"{key}={value}" for key, value in context.items())
    if context_text:
        parts.append(context_text)
    if error_message:
        parts.append(error_message)
    return "; ".join(parts)


def raise_ge_error(api_name: str, status: Optional[int] = None, **context: Any) -> NoReturn:
    """Raises ``GeError("<api_name> failed; k=v, ...; <message>")`` with the message of this
    thread's latest failed call (``get_ge_error_msg()``). ``status`` is accepted and unused, as
    in GE."""
    del status
    error_message = get_ge_error_msg()
    raise GeError(
        _failure_text(api_name, error_message, context),
        error_message=error_message,
        api_name=api_name,
        context=context,
    )


class _ValueGeError(GeError, ValueError):
    """A failed API call whose cause is a bad value (an unknown graph id, inputs that do not fit
    the graph, an option value out of range): a ``ValueError``, as ge-rs raised before, that is
    also GE's ``GeError``."""


@contextmanager
def _api_call(api_name: str, **context: Any) -> Iterator[None]:
    """Runs a call into the native core as GE's API call ``api_name``: a ``GeError`` raised inside
    is annotated in place, keeping its class (``ExecutionError``, ``DeviceError``, ...), with
    GE's message ``"<api_name> failed; k=v; <our message>"``, ``error_message``, ``api_name`` and
    ``context``; a plain ``ValueError`` becomes a ``ValueError`` that is also a ``GeError``.
    Other exceptions (a ``TypeError`` of an argument) pass unchanged."""
    try:
        yield
    except GeError as exc:
        if getattr(exc, "api_name", None) is None:  # not yet the failure of an inner call
            error_message = str(exc)
            exc.args = (_failure_text(api_name, error_message, context),)
            exc.error_message, exc.api_name, exc.context = error_message, api_name, dict(context)
        _set_error_msg(exc.error_message or str(exc))
        raise
    except ValueError as exc:
        error_message = str(exc)
        _set_error_msg(error_message)
        raise _ValueGeError(
            _failure_text(api_name, error_message, context), error_message, api_name, dict(context)
        ).with_traceback(exc.__traceback__) from None

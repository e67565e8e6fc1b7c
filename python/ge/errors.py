"""The ge-rs exception tree (re-exported here).

``GeError`` is GE's ``ge.error.GeError`` (a ``RuntimeError`` with ``error_message``, ``api_name``
and ``context``); the native extension derives the others from it, under ``ge``'s public path
(``ge.GraphBuildError`` in a ``repr`` or a traceback). It is the base of ``GraphBuildError``,
``ShapeInferenceError``, ``CompatibilityError``, ``PassError``, ``TranslationError``,
``ExecutionError``, ``DeviceError``, ``ResourceError`` (not enough memory: a compiled plan whose
peak is over ``ge.memoryLimit``, a buffer over it, or an allocation the allocator refused) and
``InternalError`` (a bug in ge-rs: a Rust panic caught at
the Python boundary, "internal error, please report: ..."). Where GE's API
specifies a built-in exception (``TypeError`` for an argument of the wrong type, ``ValueError`` for
a bad value or tensors of two builders, ``RuntimeError`` for a builder used after
``build_and_reset``), that one is raised instead.
"""

from ge._native import (
    CompatibilityError,
    DeviceError,
    ExecutionError,
    GeError,
    GraphBuildError,
    InternalError,
    PassError,
    ResourceError,
    ShapeInferenceError,
    TranslationError,
)

__all__ = [
    "GeError",
    "GraphBuildError",
    "ShapeInferenceError",
    "CompatibilityError",
    "PassError",
    "TranslationError",
    "ExecutionError",
    "DeviceError",
    "ResourceError",
    "InternalError",
]

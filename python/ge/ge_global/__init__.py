"""``ge.ge_global``: GE's process-wide set-up, ``GeApi.ge_initialize`` / ``ge_finalize``."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from ge._native import SessionCore
from ge.session import _options, _set_global_options

__all__ = ["GeApi"]


class GeApi:
    """``ge_initialize(config)`` loads the pass plugins (``ASCEND_GE_PY_PASS_PATH`` and the
    ``ge.passes.plugins`` entry points) and sets options that every later ``Session`` starts
    from; ``ge_finalize()`` unloads the plugins and clears those options."""

    _initialized = False

    @staticmethod
    def ge_initialize(config: Optional[Mapping[str, Any]] = None) -> None:
        opts = _options(config, "global")
        SessionCore(opts, False)  # the same checks as every session's (names and values)
        from ge.passes import load_pass_plugins

        load_pass_plugins()
        _set_global_options(opts)
        GeApi._initialized = True

    @staticmethod
    def ge_finalize() -> None:
        from ge.passes import unload_pass_plugins

        unload_pass_plugins()
        _set_global_options({})
        GeApi._initialized = False

"""GE's ``GeApi`` (module ``ge.ge_global.geapi``): ``ge_initialize(config)`` and ``ge_finalize()``."""

from __future__ import annotations

from typing import Dict, Optional

from ge._native import SessionCore
from ge.error import _api_call
from ge.session._options import Options, set_global_options, sort_options

__all__ = ["GeApi"]


class GeApi:
    """GE's process-wide set-up.

    ``ge_initialize(config)`` checks ``config`` as GE does (a non-empty dict of str to str; the
    options of ``ge.session``), loads the pass plugins (``ASCEND_GE_PY_PASS_PATH`` and the
    ``ge.passes.plugins`` entry points) and sets the options every later ``Session`` starts from;
    it returns 0. ``ge_finalize()`` unloads the plugins, clears those options and returns 0.
    ge-rs's extra: ``ge_initialize()`` without a config (GE requires one) sets no options.
    """

    _initialized = False

    @classmethod
    def ge_initialize(cls, config: Optional[Dict[str, str]] = None) -> int:
        if config is None:
            config = {}
        elif not isinstance(config, dict):
            raise TypeError("Ge init config must be a dictionary")
        elif not config:
            raise TypeError("Ge init config must not be empty")
        options = sort_options(config, "G", stacklevel=2)
        with _api_call("GEInitialize"):
            SessionCore(options.ours, False)  # the same checks as every session's
        from ge.passes import load_pass_plugins

        load_pass_plugins()
        from ge.custom_op.bootstrap import load_custom_op_plugins_at_init

        load_custom_op_plugins_at_init()
        set_global_options(options)
        GeApi._initialized = True
        return 0

    @classmethod
    def ge_finalize(cls) -> int:
        from ge.passes import unload_pass_plugins

        unload_pass_plugins()
        set_global_options(Options())
        GeApi._initialized = False
        return 0

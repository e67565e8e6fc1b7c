"""Finding ONNX Plugins on ``ASCEND_CUSTOM_OPP_PATH`` (GE's ``ge.onnx_plugin.bootstrap``).

The path list is shared with the custom ops (``ge.custom_op``): a file is imported once whichever
loader reads it first (``ge._internal.plugin_loader``).
"""

from __future__ import annotations

from types import ModuleType
from typing import List, Tuple

from ge._internal.plugin_loader import (
    PluginLoadFailure,
    load_plugins_from_env,
    load_plugins_from_env_isolated,
)

__all__ = ["ENV_PY_ONNX_PLUGIN_PATH", "load_onnx_plugins", "load_onnx_plugins_isolated"]

ENV_PY_ONNX_PLUGIN_PATH = "ASCEND_CUSTOM_OPP_PATH"
_MODULE_PREFIX = "_ge_py_onnx_plugin_"
_PLUGIN_KIND = "python ONNX Plugin"


def load_onnx_plugins() -> List[ModuleType]:
    """GE's loader: imports the plugins ``ASCEND_CUSTOM_OPP_PATH`` lists; the first failure
    (``FileNotFoundError`` for a missing path, ``ValueError`` for a non-``.py`` file, a plugin's
    own exception) propagates."""
    return load_plugins_from_env(
        ENV_PY_ONNX_PLUGIN_PATH, module_prefix=_MODULE_PREFIX, plugin_kind=_PLUGIN_KIND
    )


def load_onnx_plugins_isolated() -> Tuple[List[ModuleType], List[PluginLoadFailure]]:
    """Like ``load_onnx_plugins``, but a failing path is skipped with a ``PluginLoadWarning``
    naming it (the plugins a failing file registered before it failed are removed, as with
    ``load_onnx_plugins``); the others load. Returns ``(modules, failures)``. ``ge.onnx.load`` uses this."""
    return load_plugins_from_env_isolated(
        ENV_PY_ONNX_PLUGIN_PATH, module_prefix=_MODULE_PREFIX, plugin_kind=_PLUGIN_KIND
    )

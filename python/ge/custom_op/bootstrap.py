"""Loading Python custom operator plugins from ``ASCEND_CUSTOM_OPP_PATH``.

The variable lists ``.py`` files and directories (``os.pathsep``-separated); each file or
package is imported once per process. Importing runs their ``@register_op`` /
``@register_op_impl`` decorators, which put the operators into the operator library.
``GeApi.ge_initialize`` and ``Session(...)`` call ``load_custom_op_plugins_at_init``, which
isolates each file: a failing one is reported (``ge._internal.plugin_loader.PluginLoadWarning``
naming the file) and skipped.
"""

from __future__ import annotations

from types import ModuleType
from typing import List, Tuple

from ge._internal.plugin_loader import (PluginLoadFailure, load_plugins_from_env,
                                        load_plugins_from_env_isolated)

from .registry import get_registered_op_impl_dicts

ENV_PY_CUSTOM_OP_PATH = "ASCEND_CUSTOM_OPP_PATH"
_MODULE_PREFIX = "_ge_py_custom_op_"
_PLUGIN_KIND = "python custom op"


def load_custom_op_plugins() -> List[ModuleType]:
    """Imports the plugins ``ASCEND_CUSTOM_OPP_PATH`` names (GE's form: the first failure
    raises, e.g. ``FileNotFoundError`` for a missing path)."""
    return load_plugins_from_env(ENV_PY_CUSTOM_OP_PATH, module_prefix=_MODULE_PREFIX,
                                 plugin_kind=_PLUGIN_KIND)


def load_custom_op_plugins_at_init() -> Tuple[List[ModuleType], List[PluginLoadFailure]]:
    """The loading ``ge_initialize`` and session creation do: each file isolated, failures
    warned and returned."""
    return load_plugins_from_env_isolated(ENV_PY_CUSTOM_OP_PATH, module_prefix=_MODULE_PREFIX,
                                          plugin_kind=_PLUGIN_KIND)


def get_registered_op_impls() -> List[dict]:
    return get_registered_op_impl_dicts()


def get_registered_op_protos() -> List[dict]:
    from .proto import get_registered_op_proto_dicts

    return get_registered_op_proto_dicts()

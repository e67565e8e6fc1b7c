"""``ge.offline_compile``: GE's offline compilation, to ge-rs's own ``.om`` file.

``build_initialize(global_options)``, ``build_model(graph, build_options) -> ModelBuffer``,
``save_model(output_file, model)`` (writes ``<output_file>.om``), ``bundle_build_model`` /
``bundle_save_model`` over ``GraphWithOptions``, ``build_finalize()``, as in GE. ge-rs's extras:
``load_model(path) -> ModelBuffer`` and ``ModelFileError``; ``Session.add_model(graph_id,
model)`` runs a model without compiling it again. See ``ge.offline_compile.offline_compile``.
"""

from ge.offline_compile.offline_compile import *  # noqa: F403  (its __all__)
from ge.offline_compile.offline_compile import __all__ as __all__

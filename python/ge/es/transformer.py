"""``ge.es.transformer``: the ES functions of the operators CANN keeps in ops-transformer (GE's
``es_transformer`` package).

The operators are listed in ``ge.es._categories``; each function is the one of ``ge.es.all``,
imported on first use (``from ge.es.transformer import *`` imports them all).
"""

from ge.es._categories import _module_hooks

__getattr__, __dir__ = _module_hooks("transformer")

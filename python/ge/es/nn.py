"""``ge.es.nn``: the ES functions of the operators CANN keeps in ops-nn (GE's ``es_nn`` package).

The operators are listed in ``ge.es._categories``; each function is the one of ``ge.es.all``,
imported on first use (``from ge.es.nn import *`` imports them all).
"""

from ge.es._categories import _module_hooks

__getattr__, __dir__ = _module_hooks("nn")

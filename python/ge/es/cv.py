"""``ge.es.cv``: the ES functions of the operators CANN keeps in ops-cv (GE's ``es_cv`` package).

The operators are listed in ``ge.es._categories``; each function is the one of ``ge.es.all``,
imported on first use (``from ge.es.cv import *`` imports them all).
"""

from ge.es._categories import _module_hooks

__getattr__, __dir__ = _module_hooks("cv")

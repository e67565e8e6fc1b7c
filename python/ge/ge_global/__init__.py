"""``ge.ge_global``: GE's process-wide set-up, ``GeApi.ge_initialize`` / ``ge_finalize`` (both
return 0, as GE's; see ``ge.ge_global.geapi``)."""

from ge.ge_global.geapi import GeApi

__all__ = ["GeApi"]

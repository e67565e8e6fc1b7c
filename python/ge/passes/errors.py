"""Exceptions a pass raises to steer the executor.

- ``PassSkipException``: skip. In ``meet_requirements``/``replacement`` of a pattern or decompose
  pass it skips the current match or node; in ``FusionBasePass.run`` it undoes the pass's changes.
  Not a failure.
- ``PassFatalError``: fail the run on purpose; ``run_passes`` raises ``ge.PassError`` naming the
  pass, with this message.

Any other exception fails the run too, with ``ge.PassError`` carrying the traceback (and the
original exception as ``__cause__``). A failed pass leaves the graph as it was before it ran.
"""

from ge.errors import PassError

__all__ = ["PassSkipException", "PassFatalError"]


class PassSkipException(Exception):
    """Skip the current match (pattern/decompose passes) or the whole run (fusion passes)."""


class PassFatalError(PassError):
    """Fail the compile on purpose, with a message."""

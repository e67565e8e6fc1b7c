"""``python -m ge.pyatc``: atc's command line, run by ``ge compile``.

``main(cmdline_argv0=None, args=None)`` as GE's: without arguments it takes ``sys.argv``; it
exits with the command's status (0 on success, 1 on a user error, 2 on bad flags).
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional, Sequence


def _cmdline_argv(cmdline_argv0: Optional[str] = None, args: Optional[Sequence[str]] = None) -> List[str]:
    """argv as atc sees it: the program name, then the flags."""
    if cmdline_argv0 is not None:
        return [cmdline_argv0] + list(args or [])
    argv = list(sys.argv)
    if argv and os.path.basename(argv[0]) == "__main__.py":
        argv[0] = sys.executable + " -m ge.pyatc"
    return argv


def main(cmdline_argv0: Optional[str] = None, args: Optional[Sequence[str]] = None) -> None:
    from ge import cli

    argv = _cmdline_argv(cmdline_argv0, args)
    sys.exit(cli.main(["compile", *argv[1:]], prog=argv[0] if argv else None))


if __name__ == "__main__":
    main()

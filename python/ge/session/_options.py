"""Options as GE takes them: sorted into ge-rs's own keys (interpreted by the native core), GE's
other keys (accepted and recorded), and keys neither knows (accepted with a warning that names
the closest known key). Shared by ``Session`` and ``GeApi.ge_initialize``."""

from __future__ import annotations

import difflib
import logging
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ge._native import _session_option_keys
from ge.session._option_keys import GE_OPTION_LEVELS, LEVEL_NAMES

# The keys the native core interprets (ge.exec.deviceId is also GE's).
OPTION_KEYS: Tuple[str, ...] = tuple(_session_option_keys())

_log = logging.getLogger("ge.session")

_KNOWN: Tuple[str, ...] = tuple(sorted(set(OPTION_KEYS) | set(GE_OPTION_LEVELS)))
_KNOWN_BY_LOWER: Dict[str, str] = {k.lower(): k for k in _KNOWN}


@dataclass
class Options:
    """One level's options, sorted: ``ours`` go to the native core, ``recorded`` are GE's keys
    ge-rs does not interpret, ``unknown`` are keys neither knows (each warned about once)."""

    ours: Dict[str, str] = field(default_factory=dict)
    recorded: Dict[str, str] = field(default_factory=dict)
    unknown: Dict[str, str] = field(default_factory=dict)

    def over(self, base: "Options") -> "Options":
        """These options over ``base`` (a key given here wins)."""
        return Options({**base.ours, **self.ours}, {**base.recorded, **self.recorded},
                       {**base.unknown, **self.unknown})

    def report_lines(self) -> List[str]:
        """The lines ``Session.compile_report`` adds: what was recorded and what was ignored."""
        lines = []
        if self.recorded:
            lines.append("GE options recorded, not interpreted by ge-rs: "
                         + ", ".join(f"{k}={v}" for k, v in sorted(self.recorded.items())))
        if self.unknown:
            lines.append("unknown options ignored: " + ", ".join(f"{k}={v}" for k, v in sorted(self.unknown.items())))
        return lines


def closest_key(key: str) -> Optional[str]:
    """The known option key closest to ``key`` (case-insensitive), or None when none is close."""
    match = difflib.get_close_matches(key.lower(), list(_KNOWN_BY_LOWER), n=1, cutoff=0.6)
    return _KNOWN_BY_LOWER[match[0]] if match else None


def sort_options(options: Mapping[Any, Any], level: str, *, stacklevel: int) -> Options:
    """Checks names and values are strings (GE encodes both) and sorts them; ``level`` is one of
    GE's: ``G`` (GEInitialize), ``S`` (session) or ``R`` (graph). ``stacklevel`` points the
    unknown-key warning at the user's call."""
    out = Options()
    for key, value in options.items():
        if not isinstance(key, str):
            raise TypeError(f"option names must be str, got {type(key).__name__} {key!r}")
        if not isinstance(value, str):
            raise TypeError(f"option {key!r} must have a str value (GE passes options as strings), "
                            f"got {type(value).__name__} {value!r}")
        if key in OPTION_KEYS:
            out.ours[key] = value
        elif key in GE_OPTION_LEVELS:
            out.recorded[key] = value
            listed = GE_OPTION_LEVELS[key]
            where = ", ".join(LEVEL_NAMES[f] for f in listed) or "no level"
            _log.debug("%s option %s=%r recorded: a GE option ge-rs does not interpret (GE lists it for: %s)",
                       LEVEL_NAMES[level], key, value, where)
        else:
            out.unknown[key] = value
            close = closest_key(key)
            hint = f"; did you mean {close!r}?" if close else ""
            warnings.warn(f"unknown option {key!r} ignored: neither ge-rs nor GE has it{hint}",
                          UserWarning, stacklevel=stacklevel + 1)
    return out


_global = Options()
_global_lock = threading.Lock()


def set_global_options(options: Options) -> None:
    """The options every later session starts from (``GeApi.ge_initialize``)."""
    global _global
    with _global_lock:
        _global = options


def global_options() -> Options:
    with _global_lock:
        return _global

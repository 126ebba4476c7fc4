"""Where Tessera keeps its user-level caches (compiled headers, graph binaries, trained models).

One definition: ``$TESSERA_CACHE`` if set, else ``$XDG_CACHE_HOME/tessera``, else
``~/.cache/tessera``. (Verilator builds live in the repository's ``.build/``, see
``tessera.tb.runner.cache_root``.)
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    """The user cache directory for Tessera (not created here)."""
    env = os.environ.get("TESSERA_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tessera"

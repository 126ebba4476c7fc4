"""The barrel-threaded RV32IM core of a Tessera tile (docs/rtl.md, "Core ↔ tile").

One unit per module: :mod:`.decoder`, :mod:`.alu`, :mod:`.mul`, :mod:`.divider`, :mod:`.lsu`,
:mod:`.csr`, :mod:`.dot4`, :mod:`.scheduler`, :mod:`.regfile`, composed in :mod:`.core`.
"""

from .core import Core

__all__ = ["Core"]
